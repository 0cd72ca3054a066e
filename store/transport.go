package store

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Limits on what a registry can make a fetch do.
const (
	// maxRedirects caps the redirects followed for one request, as
	// net/http's default policy does (go-containerregistry has no cap).
	maxRedirects = 10
	// maxManifestSize caps a manifest, index or image config, which are
	// read into memory (containerd's limit).
	maxManifestSize = 4 << 20
)

// newTransport returns the HTTP transport given to go-containerregistry
// for a fetch from registry (host[:port]): it refuses plain HTTP except to
// loopback hosts or when insecure, keeps a fetch from a public registry on
// public addresses (dialGuard), caps redirects and manifest sizes, and
// fails a request once the registry sends nothing for idle. close closes its idle connections: a fetch's transport
// is not reused, and they would otherwise stay open (two goroutines and
// their buffers each) until their idle timeout.
func newTransport(registry string, insecureHTTP, insecureTLS bool, idle time.Duration) (rt http.RoundTripper, close func()) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	newDialGuard(registry).install(t)
	if insecureTLS {
		t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // --insecure-options=tls
	}
	var next http.RoundTripper = &idleTransport{next: t, idle: idle}
	next = &limitTransport{next: next}
	return &httpGuard{next: next, allowHTTP: insecureHTTP}, t.CloseIdleConnections
}

type httpGuard struct {
	next      http.RoundTripper
	allowHTTP bool
}

// RoundTrip refuses plain HTTP to non-loopback hosts unless allowed.
func (g *httpGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !g.allowHTTP && !isLoopback(req.URL.Hostname()) {
		return nil, fmt.Errorf("refusing plain HTTP to %s (allowed only for loopback registries, insecure mirrors or --insecure-options=http)", req.URL.Host)
	}
	return g.next.RoundTrip(req)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// limitTransport caps redirects per request and the size of manifests.
type limitTransport struct{ next http.RoundTripper }

// RoundTrip refuses the request after maxRedirects redirects and limits
// a manifest response to maxManifestSize bytes.
func (l *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if n := redirectsBefore(req); n > maxRedirects {
		return nil, fmt.Errorf("%s %s: %w (%d)", req.Method, req.URL.Path, ErrTooManyRedirects, maxRedirects)
	}
	resp, err := l.next.RoundTrip(req)
	// A manifest request the registry redirected elsewhere is still one.
	if err != nil || !isManifestPath(firstRequest(req).URL.Path) || req.Method != http.MethodGet {
		return resp, err
	}
	if resp.ContentLength > maxManifestSize {
		resp.Body.Close()
		return nil, fmt.Errorf("manifest %s has %d bytes: %w", req.URL.Path, resp.ContentLength, errManifestTooLarge)
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: maxManifestSize, what: req.URL.Path}
	return resp, nil
}

// redirectsBefore counts the redirects that led to req: net/http sets
// Response on each request it makes to follow one.
func redirectsBefore(req *http.Request) int {
	n := 0
	for r := req; r.Response != nil && r.Response.Request != nil; r = r.Response.Request {
		n++
	}
	return n
}

// firstRequest returns the request whose redirects led to req, or req.
func firstRequest(req *http.Request) *http.Request {
	for req.Response != nil && req.Response.Request != nil {
		req = req.Response.Request
	}
	return req
}

// isManifestPath reports whether p is /v2/<name>/manifests/<reference>.
func isManifestPath(p string) bool {
	i := strings.LastIndex(p, "/manifests/")
	return strings.HasPrefix(p, "/v2/") && i > 0 && !strings.Contains(p[i+len("/manifests/"):], "/")
}

var errManifestTooLarge = fmt.Errorf("%w: manifests are limited to %d bytes", ErrTooLarge, maxManifestSize)

// cappedBody fails a read past its limit.
type cappedBody struct {
	io.ReadCloser
	left int64
	what string
}

// Read reads at most left bytes, and one more to tell whether there is more.
func (c *cappedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return 0, fmt.Errorf("manifest %s: %w", c.what, errManifestTooLarge)
	}
	if err != nil && err != io.EOF {
		err = fmt.Errorf("cannot read manifest %s: %w", c.what, err)
	}
	return n, err
}
