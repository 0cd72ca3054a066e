package store

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// setHook makes reg serve the requests fn handles.
func setHook(reg *testRegistry, fn func(w http.ResponseWriter, req *http.Request) bool) {
	reg.hook.Store(&fn)
}

// assertNothingStored fails unless s holds no image, blob, tree or
// temporary entry.
func assertNothingStored(t *testing.T, s *Store) {
	t.Helper()
	imgs, err := s.ListImages()
	if err != nil || len(imgs) != 0 {
		t.Errorf("images stored: %d (%v)", len(imgs), err)
	}
	for _, d := range []string{blobsDir, treeDir, tmpDir} {
		entries, err := os.ReadDir(filepath.Join(s.Dir(), d))
		if err != nil || len(entries) != 0 {
			t.Errorf("%s holds %d entries (%v)", d, len(entries), err)
		}
	}
}

// writeManifest answers a manifest request with raw, m's encoding.
func writeManifest(w http.ResponseWriter, m *v1.Manifest, raw []byte) {
	w.Header().Set("Content-Type", string(m.MediaType))
	w.Header().Set("Docker-Content-Digest", digestOf(raw))
	w.Write(raw)
}

// fetchFails fetches ref with an idle timeout and a deadline, and returns
// the error, which must wrap want and name the reference. The default idle
// timeout, 5 s, is far from a loaded machine's answers (a refusal took
// 445 ms on 2 cores at load ~24), so a test expecting another error does
// not get ErrRegistryStalled; a stall test sets a short one.
func fetchFails(t *testing.T, s *Store, ref string, want error, opts FetchOptions) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = 5 * time.Second
	}
	start := time.Now()
	_, err := s.Fetch(ctx, ref, opts)
	if err == nil {
		t.Fatalf("fetch of %s succeeded", ref)
	}
	if ctx.Err() != nil {
		t.Fatalf("fetch of %s ran into the test deadline: %v", ref, err)
	}
	if want != nil && !errors.Is(err, want) {
		t.Errorf("fetch of %s: error %v does not wrap %v", ref, err, want)
	}
	if !strings.Contains(err.Error(), strings.SplitN(ref, "/", 2)[1]) {
		t.Errorf("error does not name %s: %v", ref, err)
	}
	t.Logf("refused in %v: %v", time.Since(start).Round(time.Millisecond), err)
	return err
}

func TestFetchRedirectLoop(t *testing.T) {
	for _, kind := range []string{"/manifests/", "/blobs/"} {
		t.Run(strings.Trim(kind, "/"), func(t *testing.T) {
			reg := startRegistry(t)
			ref := reg.push(t, "loop/app:1", testImage(t, "A=1", []entry{{name: "a", body: "a"}}))
			var hits atomic.Int64
			setHook(reg, func(w http.ResponseWriter, req *http.Request) bool {
				if !strings.Contains(req.URL.Path, kind) {
					return false
				}
				hits.Add(1)
				http.Redirect(w, req, req.URL.Path, http.StatusFound)
				return true
			})
			s := newStore(t)
			fetchFails(t, s, ref, ErrTooManyRedirects, FetchOptions{})
			if n := hits.Load(); n > 4*(maxRedirects+1) {
				t.Errorf("registry served %d redirects", n)
			}
			assertNothingStored(t, s)
		})
	}
}

func TestFetchManifestTooLarge(t *testing.T) {
	for _, lying := range []bool{false, true} {
		reg := startRegistry(t)
		setHook(reg, func(w http.ResponseWriter, req *http.Request) bool {
			if !strings.Contains(req.URL.Path, "/manifests/") {
				return false
			}
			if !lying {
				w.Header().Set("Content-Length", "5000000")
			}
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			chunk := []byte(strings.Repeat(" ", 64<<10))
			for i := 0; i < 1<<14; i++ { // up to 1 GiB, never read that far
				if _, err := w.Write(chunk); err != nil {
					return true
				}
			}
			return true
		})
		s := newStore(t)
		fetchFails(t, s, reg.host+"/big/app:1", ErrTooLarge, FetchOptions{})
		assertNothingStored(t, s)
	}
}

func TestFetchStalledRegistry(t *testing.T) {
	img := testImage(t, "A=1", []entry{{name: "a", body: strings.Repeat("x", 100000)}})
	layers, _ := img.Layers()
	for what, kind := range map[string]string{
		"manifest": "/manifests/",
		"config":   "/blobs/" + mustDigest(t, img.ConfigName),
		"layer":    "/blobs/" + mustDigest(t, layers[0].Digest),
	} {
		t.Run(what, func(t *testing.T) {
			reg := startRegistry(t)
			ref := reg.push(t, "stall/app:1", img)
			stop := make(chan struct{})
			t.Cleanup(func() { close(stop) })
			setHook(reg, func(w http.ResponseWriter, req *http.Request) bool {
				if !strings.Contains(req.URL.Path, kind) || req.Method != http.MethodGet {
					return false
				}
				rec := httptest.NewRecorder()
				reg.handler.ServeHTTP(rec, req)
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				w.Write(rec.Body.Bytes()[:rec.Body.Len()/2]) // then nothing
				w.(http.Flusher).Flush()
				select {
				case <-stop:
				case <-req.Context().Done():
				}
				return true
			})
			s := newStore(t)
			start := time.Now()
			fetchFails(t, s, ref, ErrRegistryStalled, FetchOptions{IdleTimeout: 300 * time.Millisecond})
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("stalled fetch took %v", d)
			}
			assertNothingStored(t, s)
		})
	}
}

func TestIdleTimeoutFromEnv(t *testing.T) {
	t.Setenv(IdleTimeoutEnv, "")
	if d, err := idleTimeout(FetchOptions{}); err != nil || d != DefaultIdleTimeout {
		t.Errorf("default: %v, %v", d, err)
	}
	t.Setenv(IdleTimeoutEnv, "2s")
	if d, err := idleTimeout(FetchOptions{}); err != nil || d != 2*time.Second {
		t.Errorf("from env: %v, %v", d, err)
	}
	if d, _ := idleTimeout(FetchOptions{IdleTimeout: time.Second}); d != time.Second {
		t.Errorf("option overrides env: %v", d)
	}
	t.Setenv(IdleTimeoutEnv, "soon")
	if _, err := idleTimeout(FetchOptions{}); err == nil || !strings.Contains(err.Error(), IdleTimeoutEnv) {
		t.Errorf("bad env value: %v", err)
	}
}

// lyingLayer claims a diff ID its content does not have.
type lyingLayer struct {
	v1.Layer
	diffID v1.Hash
}

func (l lyingLayer) DiffID() (v1.Hash, error) { return l.diffID, nil }

func TestFetchDiffIDMismatch(t *testing.T) {
	reg := startRegistry(t)
	good := layerOf(t, tarBytes(t, []entry{{name: "good", body: "g"}}))
	bad := layerOf(t, tarBytes(t, []entry{{name: "bad", body: "b"}}))
	other, _ := good.DiffID()
	img, err := mutate.AppendLayers(testImage(t, "A=1"), good, lyingLayer{Layer: bad, diffID: other})
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.push(t, "diffid/app:1", img)
	for _, unpack := range []bool{false, true} {
		s := newStore(t)
		err := fetchFails(t, s, ref, ErrContentMismatch, FetchOptions{Unpack: unpack})
		if !strings.Contains(err.Error(), "diff ID") {
			t.Errorf("error does not say diff ID: %v", err)
		}
		assertNothingStored(t, s)
	}

	// A blob already stored is checked against the diff ID a new image
	// claims for it.
	s := newStore(t)
	if _, err := s.Fetch(context.Background(), reg.push(t, "diffid/good:1", mustAppend(t, good)), FetchOptions{}); err != nil {
		t.Fatal(err)
	}
	badDiff, _ := bad.DiffID()
	liar := mustAppend(t, lyingLayer{Layer: good, diffID: badDiff})
	fetchFails(t, s, reg.push(t, "diffid/reuse:1", liar), ErrContentMismatch, FetchOptions{})
	if imgs, _ := s.ListImages(); len(imgs) != 1 {
		t.Errorf("%d images stored, want the first one only", len(imgs))
	}
}

func mustAppend(t *testing.T, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(testImage(t, "B=1"), layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestFetchNoMatchingPlatform(t *testing.T) {
	reg := startRegistry(t)
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: testImage(t, "A=1"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "s390x"}}},
		mutate.IndexAddendum{Add: testImage(t, "A=2"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "windows", Architecture: "amd64"}}},
	)
	ref := reg.host + "/multi/app:1"
	pushIndex(t, ref, idx)
	s := newStore(t)
	err := fetchFails(t, s, ref, ErrImageNotFound, FetchOptions{Platform: &v1.Platform{OS: "linux", Architecture: "riscv64"}})
	for _, want := range []string{"linux/riscv64", "linux/s390x", "windows/amd64"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not list %s: %v", want, err)
		}
	}
	assertNothingStored(t, s)
}

// TestFetchCorruptTarRefused: a layer whose diff ID matches but whose tar
// stream is truncated cannot be unpacked: it is refused at pull.
func TestFetchCorruptTarRefused(t *testing.T) {
	reg := startRegistry(t)
	raw := tarBytes(t, []entry{{name: "a", body: strings.Repeat("a", 5000)}})
	ref := reg.push(t, "corrupt/app:1", mustAppend(t, layerOf(t, raw[:1024])))
	s := newStore(t)
	err := fetchFails(t, s, ref, ErrContentMismatch, FetchOptions{})
	if !strings.Contains(err.Error(), "tar") {
		t.Errorf("error does not say tar: %v", err)
	}
	assertNothingStored(t, s)
}

// TestFetchUnknownBlobSizeRefused: a manifest may not give a config or a
// layer the size -1, which go-containerregistry takes as "unknown" and
// then reads the blob without a bound: a registry that streams a blob
// forever (no Content-Length) would fill memory (config) or the disk
// (layer) before the digest check at its end.
func TestFetchUnknownBlobSizeRefused(t *testing.T) {
	img := testImage(t, "A=1", []entry{{name: "a", body: "a"}})
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{"config", "layer"} {
		t.Run(what, func(t *testing.T) {
			reg := startRegistry(t)
			reg.push(t, "unsized/app:1", img)
			lie := m.DeepCopy()
			blob := lie.Config.Digest.String()
			if what == "config" {
				lie.Config.Size = -1
			} else {
				lie.Layers[0].Size = -1
				blob = lie.Layers[0].Digest.String()
			}
			raw, err := json.Marshal(lie)
			if err != nil {
				t.Fatal(err)
			}
			var served atomic.Int64
			setHook(reg, func(w http.ResponseWriter, req *http.Request) bool {
				switch {
				case strings.Contains(req.URL.Path, "/manifests/"):
					writeManifest(w, lie, raw)
					return true
				case strings.HasSuffix(req.URL.Path, "/blobs/"+blob) && req.Method == http.MethodGet:
					chunk := make([]byte, 64<<10)
					for served.Load() < 32<<20 { // "forever", cut at 32 MiB
						if _, err := w.Write(chunk); err != nil {
							return true
						}
						served.Add(int64(len(chunk)))
					}
					return true
				}
				return false
			})
			s := newStore(t)
			fetchFails(t, s, reg.host+"/unsized/app:1", ErrContentMismatch, FetchOptions{})
			if n := served.Load(); n > maxManifestSize {
				t.Errorf("registry streamed %d bytes of a %s of unknown size", n, what)
			}
			assertNothingStored(t, s)
		})
	}
}

// TestFetchRedirectedManifestTooLarge: the manifest cap holds for a
// manifest request the registry redirects to a path that is not
// /v2/<name>/manifests/<ref> (a CDN, or anything it likes).
func TestFetchRedirectedManifestTooLarge(t *testing.T) {
	reg := startRegistry(t)
	var served atomic.Int64
	setHook(reg, func(w http.ResponseWriter, req *http.Request) bool {
		switch {
		case strings.Contains(req.URL.Path, "/manifests/"):
			http.Redirect(w, req, "/cdn/manifest", http.StatusTemporaryRedirect)
			return true
		case req.URL.Path == "/cdn/manifest":
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			chunk := []byte(strings.Repeat(" ", 64<<10))
			for served.Load() < 64<<20 {
				if _, err := w.Write(chunk); err != nil {
					return true
				}
				served.Add(int64(len(chunk)))
			}
			return true
		}
		return false
	})
	s := newStore(t)
	fetchFails(t, s, reg.host+"/redirected/app:1", ErrTooLarge, FetchOptions{})
	// Socket buffers take some MiB beyond what the client read.
	if n := served.Load(); n > 24<<20 {
		t.Errorf("registry served %d bytes of a manifest", n)
	}
	assertNothingStored(t, s)
}
