package store

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// internalService is a server on loopback that stands for one of the
// node's own services (cloud metadata, say); it counts what reaches it.
func internalService(t *testing.T, hits *atomic.Int64) (port string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Write([]byte("secret"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL[strings.LastIndex(srv.URL, ":")+1:]
}

// publicRegistry makes reg count as a public registry (and every other
// loopback port as non-public) for the test.
func publicRegistry(t *testing.T, reg *testRegistry) {
	t.Helper()
	p, err := strconv.ParseUint(reg.host[strings.LastIndex(reg.host, ":")+1:], 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer func(f func(netip.AddrPort) bool) { t.Cleanup(func() { isPublic = f }) }(isPublic)
	isPublic = func(a netip.AddrPort) bool { return a.Port() == uint16(p) }
}

// redirectBlobs makes reg redirect every blob GET to the URL to gives.
func redirectBlobs(reg *testRegistry, to func(*http.Request) string) {
	setHook(reg, func(w http.ResponseWriter, req *http.Request) bool {
		if !strings.Contains(req.URL.Path, "/blobs/") || req.Method != http.MethodGet {
			return false
		}
		http.Redirect(w, req, to(req), http.StatusTemporaryRedirect)
		return true
	})
}

// refusedAsPublic fetches ref from reg, counted as a public registry: the
// fetch must fail on a non-public address, which must get no request, and
// leave nothing stored.
func refusedAsPublic(t *testing.T, reg *testRegistry, ref string, hits *atomic.Int64) {
	t.Helper()
	publicRegistry(t, reg)
	s := newStore(t)
	fetchFails(t, s, ref, ErrNonPublicAddress, FetchOptions{})
	if n := hits.Load(); n != 0 {
		t.Errorf("the internal service got %d requests", n)
	}
	assertNothingStored(t, s)
}

// TestFetchRedirectToNonPublicRefused: a public registry that redirects
// a blob to a name resolving to a non-public address (here localhost) is
// refused before anything connects there.
func TestFetchRedirectToNonPublicRefused(t *testing.T) {
	reg := startRegistry(t)
	ref := reg.push(t, "redirect/app:1", testImage(t, "A=1", []entry{{name: "a", body: "a"}}))
	var hits atomic.Int64
	port := internalService(t, &hits)
	redirectBlobs(reg, func(*http.Request) string { return "http://localhost:" + port + "/latest/meta-data" })
	refusedAsPublic(t, reg, ref, &hits)
}

// TestFetchForeignURLToNonPublicRefused: a public registry that fails a
// layer and lists a foreign URL whose name resolves to a non-public
// address (go-containerregistry refuses only literal ones) is refused.
func TestFetchForeignURLToNonPublicRefused(t *testing.T) {
	img := testImage(t, "A=1", []entry{{name: "a", body: "a"}})
	reg := startRegistry(t)
	ref := reg.push(t, "foreign/app:1", img)
	var hits atomic.Int64
	port := internalService(t, &hits)
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	lie := m.DeepCopy()
	lie.Layers[0].URLs = []string{"http://localhost:" + port + "/layer"}
	raw, err := json.Marshal(lie)
	if err != nil {
		t.Fatal(err)
	}
	layer := lie.Layers[0].Digest.String()
	setHook(reg, func(w http.ResponseWriter, req *http.Request) bool {
		switch {
		case strings.Contains(req.URL.Path, "/manifests/"):
			writeManifest(w, lie, raw)
			return true
		case strings.HasSuffix(req.URL.Path, "/blobs/"+layer):
			http.NotFound(w, req)
			return true
		}
		return false
	})
	refusedAsPublic(t, reg, ref, &hits)
}

// TestFetchInternalRegistryUnrestricted: a registry at a non-public
// address is the operator's; its redirects to other such addresses (a
// storage service beside it) are followed.
func TestFetchInternalRegistryUnrestricted(t *testing.T) {
	img := testImage(t, "A=1", []entry{{name: "a", body: "a"}})
	reg := startRegistry(t)
	ref := reg.push(t, "internal/app:1", img)
	storage := httptest.NewServer(reg.handler) // the same blobs, another port
	t.Cleanup(storage.Close)
	redirectBlobs(reg, func(req *http.Request) string { return storage.URL + req.URL.Path })
	if _, err := newStore(t).Fetch(t.Context(), ref, FetchOptions{}); err != nil {
		t.Fatalf("fetch from an internal registry redirected to internal storage: %v", err)
	}
}

// TestDialGuardProxyAllowed: behind an HTTP proxy at a non-public
// address, a public registry's fetch connects to the proxy.
func TestDialGuardProxyAllowed(t *testing.T) {
	var hits atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hits.Add(1)
		if req.URL.Host != "203.0.113.1" {
			t.Errorf("proxy asked for %q", req.URL.Host)
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(proxy.Close)
	proxyAddr := netip.MustParseAddrPort(proxy.Listener.Addr().String())
	defer func(f func(netip.AddrPort) bool) { isPublic = f }(isPublic)
	isPublic = func(a netip.AddrPort) bool { return a != proxyAddr }
	tr := &http.Transport{Proxy: func(*http.Request) (*url.URL, error) { return url.Parse(proxy.URL) }}
	newDialGuard("203.0.113.1").install(tr)
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := c.Get("http://203.0.113.1/v2/")
	if err != nil {
		t.Fatalf("GET through the proxy: %v", err)
	}
	resp.Body.Close()
	if hits.Load() != 1 {
		t.Fatalf("proxy got %d requests", hits.Load())
	}
	// Without the proxy, the same address is refused.
	direct := &http.Transport{}
	newDialGuard("203.0.113.1").install(direct)
	if _, err := direct.DialContext(t.Context(), "tcp", proxyAddr.String()); !errors.Is(err, ErrNonPublicAddress) {
		t.Fatalf("direct dial to a non-public address: %v", err)
	}
}

func TestIsPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2001:4860:4860::8888": true, "203.0.113.1": true,
		"127.0.0.1": false, "::1": false, "::ffff:127.0.0.1": false, "0.0.0.0": false, "0.1.2.3": false,
		"10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false, "fd00::1": false,
		"169.254.169.254": false, "fe80::1": false, "100.100.100.200": false,
		"224.0.0.1": false, "255.255.255.255": false, "::": false,
	} {
		if got := isPublic(netip.AddrPortFrom(netip.MustParseAddr(addr), 443)); got != want {
			t.Errorf("isPublic(%s) = %v, want %v", addr, got, want)
		}
	}
}

// TestFetchPublicRegistryNameWithPrivateRecord: a public registry whose
// name also resolves to a non-public address (here "localhost": the owner
// of a public name can add such a record, or answer a later lookup with
// one) stays public when its connection reached a public address: its
// redirects to non-public addresses are refused.
func TestFetchPublicRegistryNameWithPrivateRecord(t *testing.T) {
	reg := startRegistry(t)
	ref := reg.push(t, "redirect/named:1", testImage(t, "A=1", []entry{{name: "a", body: "a"}}))
	ref = "localhost" + strings.TrimPrefix(ref, reg.host[:strings.LastIndex(reg.host, ":")])
	var hits atomic.Int64
	port := internalService(t, &hits)
	redirectBlobs(reg, func(*http.Request) string { return "http://localhost:" + port + "/latest/meta-data" })
	refusedAsPublic(t, reg, ref, &hits)
}

func TestDialGuardIsRegistry(t *testing.T) {
	for _, tc := range []struct {
		registry, addr string
		want           bool
	}{
		{"registry.example", "registry.example:443", true},
		{"registry.example", "Registry.Example:80", true},
		{"registry.example", "registry.example:5000", false},
		{"registry.example:5000", "registry.example:5000", true},
		{"registry.example:5000", "registry.example:443", false},
		{"[::1]:5000", "[::1]:5000", true},
		{"registry.example", "storage.example:443", false},
	} {
		if got := newDialGuard(tc.registry).isRegistry(tc.addr); got != tc.want {
			t.Errorf("registry %s, dial %s: isRegistry = %v, want %v", tc.registry, tc.addr, got, tc.want)
		}
	}
}
