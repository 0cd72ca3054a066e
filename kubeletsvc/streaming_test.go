package kubeletsvc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	utilexec "k8s.io/utils/exec"

	"github.com/rkt/rkt/stage0"
)

func TestStreamExecExitCode(t *testing.T) {
	e := newTestEnv(t)
	id := e.startContainer(t, e.runPod(t, "web"), "app")
	e.rt.exec = func(ctx context.Context, o stage0.ExecOptions) (int, error) { return 2, nil }
	err := (&streamRuntime{svc: e.svc}).Exec(e.ctx, id, []string{"false"}, nil, nil, nil, false, nil)
	var ce utilexec.CodeExitError
	if !errors.As(err, &ce) || ce.Code != 2 {
		t.Errorf("Exec: %v, want a CodeExitError with code 2", err)
	}
}

func TestStreamPortForward(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	client, server := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- (&streamRuntime{svc: e.svc}).PortForward(e.ctx, pod, 8080, server) }()
	if _, err := client.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(client, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q, %v; want the echo", buf, err)
	}
	client.Close()
	<-done
	if calls := e.rt.called(); calls[len(calls)-1] != "DialPod "+pod+" tcp 127.0.0.1:8080" {
		t.Errorf("last stage0 call %q, want a dial of the pod's loopback port", calls[len(calls)-1])
	}
}

// dialRuntime is the fake runtime whose DialPod connects to a real
// loopback listener.
type dialRuntime struct {
	*fakeRuntime
	addr string
}

func (d *dialRuntime) DialPod(ctx context.Context, uuid, network, address string) (net.Conn, error) {
	var dl net.Dialer
	return dl.DialContext(ctx, "tcp", d.addr)
}

// halfClosedStream is a client stream that sends req, then half-closes
// (EOF on read) and keeps what the pod answers.
type halfClosedStream struct {
	r    io.Reader
	mu   sync.Mutex
	got  bytes.Buffer
	done chan struct{}
	once sync.Once
}

func (s *halfClosedStream) Read(p []byte) (int, error) { return s.r.Read(p) }
func (s *halfClosedStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got.Write(p)
}
func (s *halfClosedStream) Close() error { s.once.Do(func() { close(s.done) }); return nil }

// A client that half-closes its side of a forwarded connection (as
// `nc -N`, or any request/response protocol that signals the end of the
// request with EOF) must still get the answer the pod sends after it.
func TestStreamPortForwardHalfClose(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		req, _ := io.ReadAll(c)           // the whole request, up to the client's EOF
		time.Sleep(50 * time.Millisecond) // the pod takes a moment to answer
		c.Write([]byte("answer to " + string(req)))
	}()
	e.svc.rt = &dialRuntime{fakeRuntime: e.rt, addr: l.Addr().String()}
	s := &halfClosedStream{r: strings.NewReader("ping"), done: make(chan struct{})}
	if err := (&streamRuntime{svc: e.svc}).PortForward(e.ctx, pod, 8080, s); err != nil {
		t.Fatalf("PortForward: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if got := s.got.String(); got != "answer to ping" {
		t.Errorf("client got %q, want %q: the answer after the client's half-close was dropped", got, "answer to ping")
	}
}
