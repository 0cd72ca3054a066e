package testutil

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"
)

// Hook serves the registry requests it returns true for, in place of the
// registry; hostile registries are made of hooks.
type Hook func(w http.ResponseWriter, req *http.Request) bool

// AddHook makes r consult h, after the hooks added before, for every
// request.
func (r *Registry) AddHook(h Hook) {
	r.mu.Lock()
	r.hooks = append(r.hooks, h)
	r.mu.Unlock()
}

// matches reports whether req is a GET whose path contains match
// ("/manifests/" or "/blobs/sha256:...").
func matches(req *http.Request, match string) bool {
	return req.Method == http.MethodGet && strings.Contains(req.URL.Path, match)
}

// RedirectLoop redirects the matching requests to themselves, forever.
func RedirectLoop(match string) Hook {
	return func(w http.ResponseWriter, req *http.Request) bool {
		if !matches(req, match) {
			return false
		}
		http.Redirect(w, req, req.URL.String(), http.StatusTemporaryRedirect)
		return true
	}
}

// record serves req from the registry itself into a recorder.
func (r *Registry) record(req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	r.inner.ServeHTTP(rec, req)
	return rec
}

func copyHeader(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
}

// LyingContentLength serves the true body of the matching requests with a
// Content-Length delta bytes off (shorter or longer than the body).
func (r *Registry) LyingContentLength(match string, delta int) Hook {
	return func(w http.ResponseWriter, req *http.Request) bool {
		if !matches(req, match) {
			return false
		}
		rec := r.record(req)
		copyHeader(w, rec)
		body := rec.Body.Bytes()
		w.Header().Set("Content-Length", strconv.Itoa(len(body)+delta))
		w.WriteHeader(rec.Code)
		w.Write(body) // the server cuts what exceeds a short length
		return true
	}
}

// EndlessBody answers the matching requests with a body that never ends
// (until the client goes away), of the given media type.
func EndlessBody(match, mediaType string) Hook {
	return func(w http.ResponseWriter, req *http.Request) bool {
		if !matches(req, match) {
			return false
		}
		w.Header().Set("Content-Type", mediaType)
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat(" ", 64<<10))
		for req.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				break
			}
		}
		return true
	}
}

// StalledBody sends the headers and half the body of the matching
// requests, then nothing until the client goes away or stop is closed.
func (r *Registry) StalledBody(match string, stop <-chan struct{}) Hook {
	return func(w http.ResponseWriter, req *http.Request) bool {
		if !matches(req, match) {
			return false
		}
		rec := r.record(req)
		copyHeader(w, rec)
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes()[:rec.Body.Len()/2])
		w.(http.Flusher).Flush()
		select {
		case <-req.Context().Done():
		case <-stop:
		case <-time.After(10 * time.Minute):
		}
		return true
	}
}

// ServeInstead answers the matching requests with body as mediaType.
func ServeInstead(match string, body []byte, mediaType string) Hook {
	return func(w http.ResponseWriter, req *http.Request) bool {
		if !matches(req, match) {
			return false
		}
		w.Header().Set("Content-Type", mediaType)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
		return true
	}
}

// EditManifest answers the matching manifest requests with the stored
// manifest changed by edit (a JSON object), e.g. to lie about a size.
func (r *Registry) EditManifest(match string, edit func(m map[string]any)) Hook {
	return func(w http.ResponseWriter, req *http.Request) bool {
		if !matches(req, match) {
			return false
		}
		rec := r.record(req)
		var m map[string]any
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &m) != nil {
			return false
		}
		edit(m)
		b, _ := json.Marshal(m)
		return ServeInstead(match, b, rec.Header().Get("Content-Type"))(w, req)
	}
}
