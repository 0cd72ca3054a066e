package store

import (
	"archive/tar"
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// entry is one file of a test layer.
type entry struct {
	name     string
	body     string
	typ      byte // tar.TypeReg by default
	linkname string
	mode     int64
}

func tarBytes(t testing.TB, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.linkname, Mode: e.mode, ModTime: time.Unix(1700000000, 0)}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
			if h.Typeflag == tar.TypeDir {
				h.Mode = 0o755
			}
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func layerOf(t testing.TB, raw []byte) v1.Layer {
	t.Helper()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// testImage builds an image with one layer per entry list and the given env.
func testImage(t testing.TB, env string, layers ...[]entry) v1.Image {
	t.Helper()
	img := empty.Image
	for _, es := range layers {
		var err error
		img, err = mutate.AppendLayers(img, layerOf(t, tarBytes(t, es)))
		if err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", platform(FetchOptions{}).Architecture
	cfg.Config.Env = []string{env}
	cfg.Config.Cmd = []string{"/bin/sh"}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// testRegistry is an in-process registry on 127.0.0.1 that counts requests.
type testRegistry struct {
	host       string
	requests   atomic.Int64
	handler    http.Handler
	user, pass string // basic auth required when set
	// blobHook, when set, rewrites the body of blob GETs.
	blobHook atomic.Pointer[func(digest string, body []byte) []byte]
	// blobDelay, when set (ns), is slept after every 16 KiB of a blob GET.
	blobDelay atomic.Int64
	// hook, when set, serves the requests for which it returns true.
	hook atomic.Pointer[func(w http.ResponseWriter, req *http.Request) bool]
}

func startRegistry(t testing.TB) *testRegistry {
	t.Helper()
	r := &testRegistry{handler: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if r.user != "" {
			if u, p, ok := req.BasicAuth(); !ok || u != r.user || p != r.pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
		}
		if h := r.hook.Load(); h != nil && (*h)(w, req) {
			return
		}
		delay := time.Duration(r.blobDelay.Load())
		if delay > 0 && req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/sha256:") {
			rec := httptest.NewRecorder()
			r.handler.ServeHTTP(rec, req)
			w.Header().Set("Content-Length", strconv.Itoa(rec.Body.Len()))
			w.WriteHeader(rec.Code)
			b := rec.Body.Bytes()
			for len(b) > 0 {
				n := min(len(b), 16<<10)
				if _, err := w.Write(b[:n]); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				b = b[n:]
				time.Sleep(delay)
			}
			return
		}
		if hook := r.blobHook.Load(); hook != nil && req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/sha256:") {
			rec := httptest.NewRecorder()
			r.handler.ServeHTTP(rec, req)
			body := (*hook)(req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:], rec.Body.Bytes())
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(rec.Code)
			w.Write(body)
			return
		}
		r.handler.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

func (r *testRegistry) push(t testing.TB, repoTag string, img v1.Image) string {
	t.Helper()
	ref := r.host + "/" + repoTag
	nref, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(nref, img); err != nil {
		t.Fatal(err)
	}
	return ref
}

func newStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustDigest(t testing.TB, f func() (v1.Hash, error)) string {
	t.Helper()
	h, err := f()
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

func pushIndex(t testing.TB, ref string, idx v1.ImageIndex) {
	t.Helper()
	nref, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(nref, idx); err != nil {
		t.Fatal(err)
	}
}
