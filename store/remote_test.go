package store

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/rkt/rkt/store/regconfig"
)

// deadHost returns a 127.0.0.1 address nothing listens on.
func deadHost(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestMirrors(t *testing.T) {
	mirror := startRegistry(t)
	img := testImage(t, "M=1", []entry{{name: "m", body: "mirrored"}})
	mirror.push(t, "pause:3.10", img)
	cfg := &regconfig.Config{Mirrors: map[string][]regconfig.Mirror{
		"registry.k8s.io": {{Endpoint: deadHost(t), Insecure: true}, {Endpoint: mirror.host, Insecure: true}},
	}}
	s := newStore(t)
	got, err := s.Fetch(context.Background(), "registry.k8s.io/pause:3.10", FetchOptions{Registries: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != mustDigest(t, img.ConfigName) {
		t.Errorf("ID %s", got.ID)
	}
	if len(got.Names) != 1 || got.Names[0] != "registry.k8s.io/pause:3.10" {
		t.Errorf("Names = %v, want the upstream name", got.Names)
	}
	if len(got.RepoDigests) != 1 || !strings.HasPrefix(got.RepoDigests[0], "registry.k8s.io/pause@sha256:") {
		t.Errorf("RepoDigests = %v", got.RepoDigests)
	}
	// A canceled fetch fails instead of trying the endpoints.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Fetch(ctx, "registry.k8s.io/other:1", FetchOptions{Registries: cfg}); err == nil {
		t.Error("fetch of an image no endpoint has succeeded")
	}
}

// TestMirrorsOnly: a registry configured "upstream": false is never
// contacted: an image its mirror lacks is not fetched from it, and with no
// mirror the fetch fails with ErrRegistryBlocked, sending nothing.
func TestMirrorsOnly(t *testing.T) {
	upstream, mirror := startRegistry(t), startRegistry(t)
	img := testImage(t, "U=1", []entry{{name: "u", body: "upstream"}})
	ref := upstream.push(t, "app:1", img)
	mirror.push(t, "other:1", img)
	ctx := context.Background()
	cfg := &regconfig.Config{
		Mirrors:    map[string][]regconfig.Mirror{upstream.host: {{Endpoint: mirror.host, Insecure: true}}},
		NoUpstream: map[string]bool{upstream.host: true},
	}
	before := upstream.requests.Load()
	if _, err := newStore(t).Fetch(ctx, ref, FetchOptions{Registries: cfg}); err == nil || !strings.Contains(err.Error(), mirror.host) {
		t.Errorf("fetch of an image the mirror lacks: %v, want the mirror's failure", err)
	}
	if _, err := newStore(t).Fetch(ctx, upstream.host+"/other:1", FetchOptions{Registries: cfg}); err != nil {
		t.Errorf("fetch through the mirror: %v", err)
	}
	cfg.Mirrors = map[string][]regconfig.Mirror{upstream.host: nil}
	if _, err := newStore(t).Fetch(ctx, ref, FetchOptions{Registries: cfg}); !errors.Is(err, ErrRegistryBlocked) {
		t.Errorf("fetch from a blocked registry: %v, want ErrRegistryBlocked", err)
	}
	if n := upstream.requests.Load() - before; n != 0 {
		t.Errorf("the registry kept from being contacted got %d requests", n)
	}
	cfg.NoUpstream = nil
	if _, err := newStore(t).Fetch(ctx, ref, FetchOptions{Registries: cfg}); err != nil {
		t.Errorf("fetch from the registry itself, allowed again: %v", err)
	}
}

func TestAuth(t *testing.T) {
	reg := startRegistry(t)
	img := testImage(t, "S=1", []entry{{name: "secret", body: "s"}})
	ref := reg.push(t, "private/app:1", img)
	reg.user, reg.pass = "alice", "wonderland"
	ctx := context.Background()
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials from the host

	if _, err := newStore(t).Fetch(ctx, ref, FetchOptions{}); err == nil {
		t.Fatal("fetch without credentials succeeded")
	}
	if _, err := newStore(t).Fetch(ctx, ref, FetchOptions{Auth: &Auth{Username: "alice", Password: "wrong"}}); err == nil {
		t.Fatal("fetch with a wrong password succeeded")
	}
	if _, err := newStore(t).Fetch(ctx, ref, FetchOptions{Auth: &Auth{Username: "alice", Password: "wonderland"}}); err != nil {
		t.Fatalf("explicit credentials: %v", err)
	}
	cfg := &regconfig.Config{Auth: map[string]regconfig.Credentials{reg.host: {User: "alice", Password: "wonderland"}}}
	if _, err := newStore(t).Fetch(ctx, ref, FetchOptions{Registries: cfg}); err != nil {
		t.Fatalf("dockerAuth config credentials: %v", err)
	}
	dockerCfg := `{"auths":{"` + reg.host + `":{"auth":"YWxpY2U6d29uZGVybGFuZA=="}}}`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(dockerCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	if _, err := newStore(t).Fetch(ctx, ref, FetchOptions{}); err != nil {
		t.Fatalf("docker config.json credentials: %v", err)
	}
}

func TestHTTPGuard(t *testing.T) {
	for _, tc := range []struct {
		url       string
		allowHTTP bool
		refused   bool
	}{
		{"http://10.1.2.3:5000/v2/", false, true},
		{"http://192.168.1.1/v2/", false, true},
		{"http://example.com/v2/", false, true},
		{"http://10.1.2.3:5000/v2/", true, false},
		{"http://127.0.0.1:5000/v2/", false, false},
		{"http://[::1]:5000/v2/", false, false},
		{"http://localhost:5000/v2/", false, false},
	} {
		called := false
		g := &httpGuard{allowHTTP: tc.allowHTTP, next: roundTripFunc(func(*http.Request) (*http.Response, error) {
			called = true
			return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
		})}
		req, _ := http.NewRequest("GET", tc.url, nil)
		_, err := g.RoundTrip(req)
		if refused := err != nil && !called; refused != tc.refused {
			t.Errorf("%s allowHTTP=%v: refused=%v (err %v), want %v", tc.url, tc.allowHTTP, refused, err, tc.refused)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestIndexResolvedToPlatform(t *testing.T) {
	reg := startRegistry(t)
	host := platform(FetchOptions{})
	mine := testImage(t, "ARCH=mine", []entry{{name: "arch", body: "mine"}})
	other := testImage(t, "ARCH=other", []entry{{name: "arch", body: "other"}})
	otherArch := "s390x"
	if host.Architecture == otherArch {
		otherArch = "ppc64le"
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: otherArch}}},
		mutate.IndexAddendum{Add: mine, Descriptor: v1.Descriptor{Platform: &host}},
	)
	ref := reg.host + "/multi/arch:1"
	pushIndex(t, ref, idx)
	got, err := newStore(t).Fetch(context.Background(), ref, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != mustDigest(t, mine.ConfigName) {
		t.Errorf("got image %s, want this platform's %s", got.ID, mustDigest(t, mine.ConfigName))
	}
	if want := reg.host + "/multi/arch@" + mustDigest(t, idx.Digest); len(got.RepoDigests) != 1 || got.RepoDigests[0] != want {
		t.Errorf("RepoDigests = %v, want [%s] (the index digest)", got.RepoDigests, want)
	}
	if got.ManifestDigest != mustDigest(t, mine.Digest) {
		t.Errorf("ManifestDigest = %s, want the platform manifest", got.ManifestDigest)
	}
}

func TestInsecureMirrorTLS(t *testing.T) {
	handler := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewTLSServer(handler)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")
	img := testImage(t, "TLS=1", []entry{{name: "t", body: "tls"}})
	nref, _ := name.ParseReference(host + "/tls/img:1")
	if err := remote.Write(nref, img, remote.WithTransport(srv.Client().Transport)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The upstream is a dead loopback port: no traffic leaves the host.
	upstream := deadHost(t)
	ref := upstream + "/tls/img:1"
	secure := &regconfig.Config{Mirrors: map[string][]regconfig.Mirror{upstream: {{Endpoint: host}}}}
	if _, err := newStore(t).Fetch(ctx, ref, FetchOptions{Registries: secure}); err == nil {
		t.Error("fetch from a mirror with an untrusted certificate succeeded")
	}
	insecure := &regconfig.Config{Mirrors: map[string][]regconfig.Mirror{upstream: {{Endpoint: host, Insecure: true}}}}
	if _, err := newStore(t).Fetch(ctx, ref, FetchOptions{Registries: insecure}); err != nil {
		t.Errorf("insecure mirror with a self-signed certificate: %v", err)
	}
}
