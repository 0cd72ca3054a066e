package kubeletsvc

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"

	"golang.org/x/net/websocket"

	"github.com/rkt/rkt/stage0"
)

// spdyExec opens the exec session at rawURL as a SPDY client (protocol
// v4, the streams r asks for) and returns its TCP connection.
func spdyExec(t *testing.T, rawURL string, r *runtimeapi.ExecRequest) net.Conn {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	req, err := http.NewRequest(http.MethodPost, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(httpstream.HeaderConnection, httpstream.HeaderUpgrade)
	req.Header.Set(httpstream.HeaderUpgrade, spdy.HeaderSpdy31)
	req.Header.Set(httpstream.HeaderProtocolVersion, remotecommandserver.StreamProtocolV4Name)
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("exec session: %s: %s", resp.Status, b)
	}
	sc, err := spdy.NewClientConnection(conn)
	if err != nil {
		t.Fatal(err)
	}
	types := []string{remotecommandserver.StreamTypeError, remotecommandserver.StreamTypeStdout}
	if r.Stdin {
		types = append(types, remotecommandserver.StreamTypeStdin)
	}
	if r.Stderr {
		types = append(types, remotecommandserver.StreamTypeStderr)
	}
	if r.Tty {
		types = append(types, remotecommandserver.StreamTypeResize)
	}
	for _, typ := range types {
		h := http.Header{}
		h.Set(remotecommandserver.StreamType, typ)
		if _, err := sc.CreateStream(h); err != nil {
			t.Fatalf("cannot create the %s stream: %v", typ, err)
		}
	}
	return conn
}

// wsExec opens the exec session at rawURL as a websocket client (protocol
// v4.channel.k8s.io) and returns its TCP connection.
func wsExec(t *testing.T, rawURL string) net.Conn {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Scheme = "ws"
	cfg, err := websocket.NewConfig(u.String(), "http://"+u.Host)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Protocol = []string{remotecommandserver.StreamProtocolV4Name}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := websocket.NewClient(cfg, conn); err != nil {
		t.Fatalf("exec session: %v", err)
	}
	return conn
}

// TestStreamExecEndsWhenClientGone: an exec session whose client goes away
// (its connection closed with no stream closed or reset first: a killed
// crictl or kubectl), over SPDY or a websocket, ends the exec: the
// runtime's context is cancelled, so stage0 ends the process, also one
// that neither reads its stdin nor writes (sleep). Nothing of rkt's does
// it: net/http cancels a request's context when a read of its connection
// fails, also after the streaming server hijacked it (it reads through
// the hijacked buffered reader), which net/http does not document.
func TestStreamExecEndsWhenClientGone(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stdin     bool
		tty       bool
		websocket bool
	}{
		{"no stdin", false, false, false},
		{"stdin", true, false, false},
		{"terminal", true, true, false},
		{"websocket", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			e.withStream(t)
			id := e.startContainer(t, e.runPod(t, "web"), "app")
			started, ended := make(chan struct{}), make(chan error, 1)
			e.rt.exec = func(ctx context.Context, o stage0.ExecOptions) (int, error) {
				close(started)
				select {
				case <-ctx.Done():
					ended <- ctx.Err()
					return -1, ctx.Err()
				case <-time.After(time.Minute):
					ended <- nil
					return 0, nil
				}
			}
			r := &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sleep", "1000"}, Stdin: tc.stdin, Stdout: true, Stderr: !tc.tty, Tty: tc.tty}
			resp, err := e.rs.Exec(e.ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			var conn net.Conn
			if tc.websocket {
				conn = wsExec(t, resp.Url)
			} else {
				conn = spdyExec(t, resp.Url, r)
			}
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatal("the exec did not start")
			}
			conn.Close()
			select {
			case err := <-ended:
				if err == nil {
					t.Fatal("the exec ran to its end: its client's departure did not cancel it")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the exec still runs 5 s after its client went away")
			}
		})
	}
}
