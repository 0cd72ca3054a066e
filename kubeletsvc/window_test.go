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

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// tappedConn keeps a copy of what the server sends.
type tappedConn struct {
	net.Conn
	mu  sync.Mutex
	got bytes.Buffer
}

func (c *tappedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.got.Write(p[:n])
	c.mu.Unlock()
	return n, err
}

// TestNoPingPerCall: the server's receive windows are fixed, so a call
// costs no BDP ping (and no wake-up for its ack) on either side.
func TestNoPingPerCall(t *testing.T) {
	e := newTestEnv(t)
	var tap *tappedConn
	sock := strings.TrimPrefix(e.conn.Target(), "unix://")
	conn, err := grpc.NewClient("passthrough:///"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "unix", sock)
			if err != nil {
				return nil, err
			}
			tap = &tappedConn{Conn: c}
			return tap, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rs := runtimeapi.NewRuntimeServiceClient(conn)
	const calls = 20
	for i := 0; i < calls; i++ {
		if _, err := rs.Version(e.ctx, &runtimeapi.VersionRequest{}); err != nil {
			t.Fatalf("Version: %v", err)
		}
	}
	tap.mu.Lock()
	sent := bytes.NewReader(tap.got.Bytes())
	tap.mu.Unlock()
	fr := http2.NewFramer(io.Discard, sent)
	var pings, headers int
	for {
		f, err := fr.ReadFrame()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading the server's frames: %v", err)
		}
		switch f := f.(type) {
		case *http2.PingFrame:
			if !f.IsAck() {
				pings++
			}
		case *http2.HeadersFrame:
			headers++
		}
	}
	if headers < calls {
		t.Fatalf("read %d header frames of the server, want at least %d", headers, calls)
	}
	if pings > 0 {
		t.Errorf("the server sent %d pings in %d calls, want none", pings, calls)
	}
}

// BenchmarkVersion is the per-call floor: gRPC and the interceptor over a
// unix socket, one call at a time.
func BenchmarkVersion(b *testing.B) {
	e := newTestEnv(b)
	for b.Loop() {
		if _, err := e.rs.Version(e.ctx, &runtimeapi.VersionRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRequestLargerThanWindow: a request of several windows (the message
// limit is 16 MiB) still arrives, through the window updates.
func TestRequestLargerThanWindow(t *testing.T) {
	e := newTestEnv(t)
	ref := strings.Repeat("a", 3*recvWindow)
	_, err := e.is.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if c := status.Code(err); c != codes.InvalidArgument && c != codes.OK {
		t.Fatalf("ImageStatus of a %d-byte reference: %v, want InvalidArgument or an answer", len(ref), err)
	}
}
