package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// IdleTimeoutEnv names the environment variable that sets how long a
// registry may send nothing (no response headers, no body bytes) before a
// fetch fails, as a Go duration ("30s", "2m"). FetchOptions.IdleTimeout
// overrides it; the default is DefaultIdleTimeout.
const IdleTimeoutEnv = "RKT_FETCH_IDLE_TIMEOUT"

// DefaultIdleTimeout is the idle timeout when neither FetchOptions nor the
// environment set one.
const DefaultIdleTimeout = 30 * time.Second

// idleTimeout returns the idle timeout of a fetch.
func idleTimeout(opts FetchOptions) (time.Duration, error) {
	if opts.IdleTimeout > 0 {
		return opts.IdleTimeout, nil
	}
	v := os.Getenv(IdleTimeoutEnv)
	if v == "" {
		return DefaultIdleTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("invalid %s=%q: want a positive duration such as 30s", IdleTimeoutEnv, v)
	}
	return d, nil
}

// idleTransport fails a request when the registry sends nothing for idle:
// while it waits for the response headers, and during each body read.
// Time the caller spends between reads does not count.
type idleTransport struct {
	next http.RoundTripper
	idle time.Duration
}

// RoundTrip runs the request under a watchdog that cancels it when idle.
func (t *idleTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	w := &watchdog{idle: t.idle, cancel: cancel, req: req}
	w.timer = time.AfterFunc(t.idle, w.fire)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	w.timer.Stop()
	if err != nil {
		cancel()
		return nil, w.check(err)
	}
	resp.Body = &idleBody{ReadCloser: resp.Body, w: w}
	return resp, nil
}

type watchdog struct {
	idle   time.Duration
	timer  *time.Timer
	cancel context.CancelFunc
	req    *http.Request
	fired  atomic.Bool
}

func (w *watchdog) fire() {
	w.fired.Store(true)
	w.cancel()
}

// check replaces the error of a request the watchdog canceled.
func (w *watchdog) check(err error) error {
	if err == nil || errors.Is(err, io.EOF) || !w.fired.Load() {
		return err
	}
	return fmt.Errorf("%s %s: %w: nothing received for %s (%s)", w.req.Method, w.req.URL.Path, ErrRegistryStalled, w.idle, IdleTimeoutEnv)
}

// idleBody arms the watchdog during each read.
type idleBody struct {
	io.ReadCloser
	w *watchdog
}

// Read fails once the registry sent nothing for the idle timeout.
func (b *idleBody) Read(p []byte) (int, error) {
	b.w.timer.Reset(b.w.idle)
	n, err := b.ReadCloser.Read(p)
	b.w.timer.Stop()
	return n, b.w.check(err)
}

// Close closes the body and releases the request's context.
func (b *idleBody) Close() error {
	b.w.timer.Stop()
	err := b.ReadCloser.Close()
	b.w.cancel()
	return err
}
