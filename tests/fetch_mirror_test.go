package tests

import (
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rkt/rkt/tests/testutil"
)

// closedPort returns a 127.0.0.1 address nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestFetchMirror resolves registry.k8s.io/pause:3.9 through loopback
// mirrors (the first one down): the image keeps its upstream name, and
// nothing else is contacted.
func TestFetchMirror(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	pause := testutil.BusyboxWith(t, testutil.ImageConfig{User: "65535", Entrypoint: []string{"/bin/sleep", "3600"}})
	reg.Push(t, "pause:3.9", pause)
	id := testutil.ImageID(t, pause)
	testutil.WriteMirrorConfig(t, env.LocalConfig, "registry.k8s.io",
		testutil.MirrorEndpoint{Endpoint: closedPort(t)},
		testutil.MirrorEndpoint{Endpoint: reg.Addr})

	if got := env.Fetch("registry.k8s.io/pause:3.9"); got != id {
		t.Fatalf("fetch through mirror printed %s, want %s", got, id)
	}
	info := env.FindImage(id)
	if info == nil || !slices.Contains(info.Names, "registry.k8s.io/pause:3.9") {
		t.Fatalf("image does not keep its upstream name: %+v", info)
	}
	for _, n := range info.Names {
		if strings.Contains(n, "127.0.0.1") {
			t.Errorf("mirror address leaked into the image names: %v", info.Names)
		}
	}
	// Resolvable by its upstream name.
	env.RunOK("image", "cat-manifest", "registry.k8s.io/pause:3.9")

	// docker.io images through a mirror too (bare names normalize to docker.io/library/...).
	reg.Push(t, "library/busybox:latest", testutil.Busybox(t))
	testutil.WriteMirrorConfig(t, env.LocalConfig, "docker.io", testutil.MirrorEndpoint{Endpoint: reg.Addr})
	bid := env.Fetch("busybox")
	if info := env.FindImage(bid); info == nil || !slices.Contains(info.Names, "docker.io/library/busybox:latest") {
		t.Errorf("bare name not normalized: %+v", info)
	}

	// An image no mirror has: the error names the mirror tried. (The
	// upstream here is a closed loopback port, so the fallback to it sends
	// nothing off the host.)
	upstream := closedPort(t)
	testutil.WriteMirrorConfig(t, env.LocalConfig, upstream, testutil.MirrorEndpoint{Endpoint: reg.Addr})
	r := env.RunFail("fetch", "--no-progress", upstream+"/nothere:1")
	if !strings.Contains(r.Stderr, reg.Addr) || !strings.Contains(r.Stderr, upstream) {
		t.Errorf("error does not name the mirror and the registry: %s", r.Stderr)
	}
	// Through the mirror, an image of that registry keeps the upstream name.
	mid := env.Fetch(upstream + "/pause:3.9")
	if info := env.FindImage(mid); info == nil || !slices.Contains(info.Names, upstream+"/pause:3.9") {
		t.Errorf("names %+v lack %s/pause:3.9", info, upstream)
	}

	// "upstream": false: a registry (here a live one, which has the image)
	// is never contacted; an image its mirror lacks is not fetched, and
	// with no mirror the registry is blocked.
	live := testutil.StartRegistry(t)
	ref := live.Push(t, "only/upstream:1", testutil.Busybox(t))
	live.ResetRequests()
	testutil.WriteMirrorOnlyConfig(t, env.LocalConfig, live.Addr, testutil.MirrorEndpoint{Endpoint: reg.Addr})
	if r := env.RunFail("fetch", "--no-progress", ref); strings.Contains(r.Stderr, live.Addr+": ") {
		t.Errorf("the registry kept from being contacted was tried: %s", r.Stderr)
	}
	testutil.WriteMirrorOnlyConfig(t, env.LocalConfig, live.Addr)
	if r := env.RunFail("fetch", "--no-progress", ref); !strings.Contains(r.Stderr, "blocked") {
		t.Errorf("fetch from a blocked registry: %s, want it blocked", r.Stderr)
	}
	if n := len(live.Requests()); n != 0 {
		t.Errorf("the registry kept from being contacted got %d requests: %v", n, live.Requests())
	}
}

// dummyAddr creates a bridge (no ports) with a random 198.18.0.0/15 address (a
// local, non-loopback address: traffic to it never leaves the host) and
// removes it at cleanup.
func dummyAddr(t *testing.T) string {
	t.Helper()
	b := make([]byte, 3)
	rand.Read(b)
	link := fmt.Sprintf("rktt%x", b)
	ip := fmt.Sprintf("198.18.%d.%d", b[1], 1+int(b[2])%250)
	if out, err := exec.Command("ip", "link", "add", link, "type", "bridge").CombinedOutput(); err != nil {
		t.Skipf("cannot create a bridge: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "link", "del", link).Run() })
	for _, args := range [][]string{{"addr", "add", ip + "/32", "dev", link}, {"link", "set", link, "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v %s", args, err, out)
		}
	}
	return ip
}

// TestFetchPlainHTTPRefusedForNonLoopback serves a registry over plain
// HTTP on a local non-loopback address: rkt must not speak plain HTTP to it
// unless --insecure-options=http (or the mirror is marked insecure).
func TestFetchPlainHTTPRefusedForNonLoopback(t *testing.T) {
	ip := dummyAddr(t)
	reg := testutil.StartRegistry(t)
	_, id := testutil.PushBusybox(t, reg, "plain/busybox:1")
	// Serve the same registry on the non-loopback address.
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("cannot listen on %s: %v", ip, err)
	}
	var plainRequests atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainRequests.Add(1)
		r.URL.Scheme, r.URL.Host = "http", reg.Addr
		resp, err := http.DefaultTransport.RoundTrip(r.Clone(r.Context()))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			w.Write(buf[:n])
			if err != nil {
				return
			}
		}
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	remote := l.Addr().String() + "/plain/busybox:1"

	env := testutil.NewEnv(t)
	r := env.RunFail("fetch", "--no-progress", remote)
	if n := plainRequests.Load(); n != 0 {
		t.Fatalf("rkt sent %d plain HTTP requests to a non-loopback registry without --insecure-options=http", n)
	}
	t.Logf("refused as expected: %s", strings.TrimSpace(r.Stderr))

	if got := env.Fetch(remote, "--insecure-options=http"); got != id {
		t.Errorf("fetch with --insecure-options=http printed %s, want %s", got, id)
	}
	if plainRequests.Load() == 0 {
		t.Errorf("no request reached the registry with --insecure-options=http")
	}

	// Through a mirror: refused unless the mirror is marked insecure.
	env2 := testutil.NewEnv(t)
	upstream := closedPort(t) // the fallback to the upstream stays on loopback
	testutil.WriteMirrorConfig(t, env2.LocalConfig, upstream, testutil.MirrorEndpoint{Endpoint: l.Addr().String()})
	before := plainRequests.Load()
	env2.RunFail("fetch", "--no-progress", upstream+"/plain/busybox:1")
	if plainRequests.Load() != before {
		t.Fatalf("plain HTTP sent to a secure non-loopback mirror")
	}
	testutil.WriteMirrorConfig(t, env2.LocalConfig, upstream, testutil.MirrorEndpoint{Endpoint: l.Addr().String(), Insecure: true})
	if got := env2.Fetch(upstream + "/plain/busybox:1"); got != id {
		t.Errorf("fetch through insecure mirror printed %s, want %s", got, id)
	}
}
