package kubeletsvc

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"k8s.io/cri-streaming/pkg/streaming"
)

// lazyStream is the exec/attach/port-forward streaming server, made on
// the first Exec, Attach or PortForward: its HTTP router (go-restful) and
// its serving goroutine are not needed by a node that never streams. Its
// listener is bound at start, so that a bad --stream-address fails there
// and the URLs' address never changes.
type lazyStream struct {
	l   net.Listener
	rt  streaming.Runtime
	log *slog.Logger

	mu     sync.Mutex
	srv    streaming.Server // nil until first use
	hs     *http.Server
	closed bool
}

// newLazyStream binds addr; nothing serves it until first use.
func newLazyStream(addr string, rt streaming.Runtime, log *slog.Logger) (*lazyStream, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen for streaming on %q: %w", addr, err)
	}
	return &lazyStream{l: l, rt: rt, log: log}, nil
}

// baseURL is the URL the streaming URLs start with.
func (s *lazyStream) baseURL() *url.URL {
	return &url.URL{Scheme: "http", Host: s.l.Addr().String()}
}

// server returns the streaming server, making and serving it first.
func (s *lazyStream) server() (streaming.Server, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the streaming server is stopped")
	}
	if s.srv != nil {
		return s.srv, nil
	}
	cfg := streaming.DefaultConfig
	cfg.Addr = s.l.Addr().String()
	cfg.BaseURL = s.baseURL()
	st, err := streaming.NewServer(cfg, s.rt)
	if err != nil {
		return nil, fmt.Errorf("cannot create the streaming server: %w", err)
	}
	s.srv = st
	// a connection left idle between requests is closed (the streams
	// themselves are hijacked: no timeout applies to them)
	s.hs = &http.Server{Handler: st, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second}
	go func() {
		if err := s.hs.Serve(s.l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("streaming server stopped", "error", err)
		}
	}()
	return st, nil
}

// close stops serving (and closes the listener).
func (s *lazyStream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.hs != nil {
		s.hs.Close()
		return
	}
	s.l.Close()
}
