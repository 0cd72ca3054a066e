package kubeletsvc

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestLazyStream: the streaming server is made and served on first use
// only, at the address bound at start, and stops with close.
func TestLazyStream(t *testing.T) {
	e := newTestEnv(t)
	st, err := newLazyStream("127.0.0.1:0", &streamRuntime{svc: e.svc}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	addr := st.l.Addr().String()
	if st.srv != nil {
		t.Fatal("streaming server made before first use")
	}
	s1, err := st.server()
	if err != nil {
		t.Fatal(err)
	}
	if s2, _ := st.server(); s2 != s1 {
		t.Error("a second streaming server was made")
	}
	r, err := s1.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"true"}, Stdout: true})
	if err != nil || !strings.HasPrefix(r.GetUrl(), "http://"+addr+"/exec/") {
		t.Fatalf("GetExec: %v, %v; want a URL on %s", r, err, addr)
	}
	resp, err := http.Get("http://" + addr + "/exec/badtoken")
	if err != nil {
		t.Fatalf("the streaming server does not serve: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown token: HTTP %d, want 404", resp.StatusCode)
	}
	st.close()
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the streaming address still accepts after close")
	}
	if _, err := st.server(); err == nil {
		t.Error("a closed streaming server was made again")
	}

	// closed before any use: the listener is closed too
	st, err = newLazyStream("127.0.0.1:0", &streamRuntime{svc: e.svc}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	addr = st.l.Addr().String()
	st.close()
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("an unused streaming address still accepts after close")
	}
}
