package testutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is an in-process OCI registry on 127.0.0.1 (go-containerregistry's
// pkg/registry), optionally behind basic or bearer-token auth, that records
// the requests it serves and can serve blobs slowly.
type Registry struct {
	Addr string // host:port on 127.0.0.1

	srv       *httptest.Server
	inner     http.Handler
	user      string
	pass      string
	tokenAuth bool
	token     string

	mu       sync.Mutex
	requests []string
	blobRate int // bytes per second for blob GETs; 0 = full speed
	corrupt  map[string]bool
	hooks    []Hook
}

// RegistryOption configures StartRegistry.
type RegistryOption func(*Registry)

// WithBasicAuth requires HTTP basic auth with user and pass on /v2/.
func WithBasicAuth(user, pass string) RegistryOption {
	return func(r *Registry) { r.user, r.pass = user, pass }
}

// WithTokenAuth requires a bearer token on /v2/ (Docker token flow): the
// realm /token hands one out for basic credentials user and pass.
func WithTokenAuth(user, pass string) RegistryOption {
	return func(r *Registry) { r.user, r.pass, r.tokenAuth = user, pass, true }
}

// StartRegistry starts a registry on 127.0.0.1:0, stopped at cleanup.
func StartRegistry(t testing.TB, opts ...RegistryOption) *Registry {
	t.Helper()
	r := &Registry{
		inner: registry.New(registry.Logger(log.New(io.Discard, "", 0))),
		token: "tok-" + fmt.Sprint(time.Now().UnixNano()),
	}
	for _, o := range opts {
		o(r)
	}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.Addr = strings.TrimPrefix(r.srv.URL, "http://")
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the registry's base URL (http://127.0.0.1:port).
func (r *Registry) URL() string { return r.srv.URL }

// Ref returns the reference of repoTag (e.g. "busybox:1" or
// "library/x@sha256:...") on this registry.
func (r *Registry) Ref(repoTag string) string { return r.Addr + "/" + repoTag }

// SetBlobRate throttles blob downloads to bytesPerSecond (0: full speed).
func (r *Registry) SetBlobRate(bytesPerSecond int) {
	r.mu.Lock()
	r.blobRate = bytesPerSecond
	r.mu.Unlock()
}

// CorruptBlob makes the registry serve the blob with the given digest
// ("sha256:...") with one byte flipped (same length), as a faulty mirror or
// an attacker would.
func (r *Registry) CorruptBlob(digest string) {
	r.mu.Lock()
	if r.corrupt == nil {
		r.corrupt = map[string]bool{}
	}
	r.corrupt[digest] = true
	r.mu.Unlock()
}

// Requests returns "METHOD /path" of every request served so far.
func (r *Registry) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// CountRequests counts served requests whose "METHOD /path" contains sub.
func (r *Registry) CountRequests(sub string) int {
	n := 0
	for _, q := range r.Requests() {
		if strings.Contains(q, sub) {
			n++
		}
	}
	return n
}

// ResetRequests forgets the recorded requests.
func (r *Registry) ResetRequests() {
	r.mu.Lock()
	r.requests = nil
	r.mu.Unlock()
}

func (r *Registry) pushOptions() []remote.Option {
	if r.user == "" {
		return nil
	}
	return []remote.Option{remote.WithAuth(&authn.Basic{Username: r.user, Password: r.pass})}
}

// Push pushes img as repoTag ("name:tag" or "name") and returns its full
// reference on this registry.
func (r *Registry) Push(t testing.TB, repoTag string, img v1.Image) string {
	t.Helper()
	ref, err := name.ParseReference(r.Ref(repoTag))
	if err != nil {
		t.Fatalf("bad reference %q: %v", repoTag, err)
	}
	r.preUploadLyingBlobs(t, ref.Context(), img)
	if err := remote.Write(ref, img, r.pushOptions()...); err != nil {
		t.Fatalf("cannot push %s: %v", ref, err)
	}
	return ref.String()
}

// PushIndex pushes an image index as repoTag and returns its reference.
func (r *Registry) PushIndex(t testing.TB, repoTag string, idx v1.ImageIndex) string {
	t.Helper()
	ref, err := name.ParseReference(r.Ref(repoTag))
	if err != nil {
		t.Fatalf("bad reference %q: %v", repoTag, err)
	}
	if err := remote.WriteIndex(ref, idx, r.pushOptions()...); err != nil {
		t.Fatalf("cannot push index %s: %v", ref, err)
	}
	return ref.String()
}

// preUploadLyingBlobs uploads, with their true size, the blobs of raw
// layers that declare another size, so that the push of the image (which
// finds them present) writes the lying size into the manifest only.
func (r *Registry) preUploadLyingBlobs(t testing.TB, repo name.Repository, img v1.Image) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatalf("cannot list layers: %v", err)
	}
	for _, l := range layers {
		rl, ok := l.(*rawLayer)
		if !ok || rl.size == int64(len(rl.blob)) {
			continue
		}
		honest := &rawLayer{blob: rl.blob, diffID: rl.diffID, size: int64(len(rl.blob))}
		if err := remote.WriteLayer(repo, honest, r.pushOptions()...); err != nil {
			t.Fatalf("cannot upload blob: %v", err)
		}
	}
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests = append(r.requests, req.Method+" "+req.URL.Path)
	rate := r.blobRate
	corrupt := r.corrupt[path.Base(req.URL.Path)]
	hooks := r.hooks
	r.mu.Unlock()
	for _, h := range hooks {
		if h(w, req) {
			return
		}
	}
	if req.URL.Path == "/token" && r.tokenAuth {
		r.serveToken(w, req)
		return
	}
	if r.user != "" && !r.authorized(req) {
		if r.tokenAuth {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="testutil"`, r.srv.URL))
		} else {
			w.Header().Set("WWW-Authenticate", `Basic realm="testutil"`)
		}
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
		return
	}
	isBlobGet := req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/sha256:")
	if isBlobGet && (rate > 0 || corrupt) {
		r.serveBlob(w, req, rate, corrupt)
		return
	}
	r.inner.ServeHTTP(w, req)
}

func (r *Registry) authorized(req *http.Request) bool {
	if r.tokenAuth {
		return req.Header.Get("Authorization") == "Bearer "+r.token
	}
	u, p, ok := req.BasicAuth()
	return ok && u == r.user && p == r.pass
}

func (r *Registry) serveToken(w http.ResponseWriter, req *http.Request) {
	u, p, ok := req.BasicAuth()
	if !ok || u != r.user || p != r.pass {
		w.Header().Set("WWW-Authenticate", `Basic realm="testutil-token"`)
		http.Error(w, "bad credentials", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"token": r.token, "access_token": r.token, "expires_in": 300})
}

// serveBlob serves a blob, with a byte flipped if corrupt, at rate
// bytes/s (0: at once) in small chunks, stopping when the client goes away.
func (r *Registry) serveBlob(w http.ResponseWriter, req *http.Request, rate int, corrupt bool) {
	rec := httptest.NewRecorder()
	r.inner.ServeHTTP(rec, req)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	body := rec.Body.Bytes()
	if corrupt && len(body) > 0 {
		body = append([]byte(nil), body...)
		body[len(body)/2] ^= 0xff
	}
	if rate == 0 {
		w.Write(body)
		return
	}
	chunk := rate / 20
	if chunk < 512 {
		chunk = 512
	}
	for len(body) > 0 {
		n := min(chunk, len(body))
		if _, err := io.Copy(w, bytes.NewReader(body[:n])); err != nil {
			return
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		body = body[n:]
		select {
		case <-req.Context().Done():
			return
		case <-time.After(time.Duration(n) * time.Second / time.Duration(rate)):
		}
	}
}
