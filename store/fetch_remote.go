package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// endpoint is one place to fetch an image from: a mirror or the upstream.
type endpoint struct {
	host        string
	insecure    bool // plain HTTP allowed
	insecureTLS bool // TLS certificates not verified
	mirror      bool
}

// endpoints lists the configured mirrors of r's registry, in order, then
// the registry itself unless the configuration keeps it from being
// contacted.
func endpoints(r Reference, opts FetchOptions) []endpoint {
	var eps []endpoint
	for _, m := range opts.Registries.MirrorsFor(r.Registry) {
		// An insecure mirror is one as Docker's insecure registries: plain
		// HTTP or TLS with an unverified certificate.
		eps = append(eps, endpoint{host: m.Endpoint, insecure: m.Insecure || opts.InsecureHTTP,
			insecureTLS: m.Insecure || opts.InsecureTLS, mirror: true})
	}
	if !opts.Registries.UpstreamAllowed(r.Registry) {
		return eps
	}
	return append(eps, endpoint{host: r.Registry, insecure: opts.InsecureHTTP, insecureTLS: opts.InsecureTLS})
}

// fetchRemote fetches r from its mirrors or registry. The image keeps its
// upstream name whichever endpoint served it.
func (s *Store) fetchRemote(ctx context.Context, r Reference, opts FetchOptions) (*Image, error) {
	idle, err := idleTimeout(opts)
	if err != nil {
		return nil, err
	}
	eps := endpoints(r, opts)
	if len(eps) == 0 {
		return nil, fmt.Errorf("cannot fetch %s: %s: %w", r, r.Registry, ErrRegistryBlocked)
	}
	var errs endpointErrors
	for _, ep := range eps {
		img, err := s.fetchFrom(ctx, r, ep, idle, opts)
		if err == nil {
			return img, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("cannot fetch %s: %w", r, ctx.Err())
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep.host, classifyRegistryError(err)))
	}
	return nil, fmt.Errorf("cannot fetch %s: %w", r, errs)
}

// endpointErrors are the failures of the endpoints tried, in order.
type endpointErrors []error

// Error joins the failures with "; ".
func (e endpointErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap lets errors.Is and errors.As see every failure.
func (e endpointErrors) Unwrap() []error { return e }

func (s *Store) fetchFrom(ctx context.Context, r Reference, ep endpoint, idle time.Duration, opts FetchOptions) (*Image, error) {
	rref, err := r.remoteRef(ep.host, ep.insecure)
	if err != nil {
		return nil, err
	}
	rt, closeIdle := newTransport(ep.host, ep.insecure, ep.insecureTLS, idle)
	defer closeIdle()
	ropts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithTransport(rt),
		remote.WithPlatform(platform(opts)),
		remote.WithAuthFromKeychain(keychain(ep, opts)),
	}
	desc, err := remote.Get(rref, ropts...)
	if err != nil {
		return nil, err
	}
	topDigest := desc.Digest.String()
	repoDigest := r.DigestRef(topDigest)
	if r.Digest != "" && r.Digest != topDigest {
		return nil, fmt.Errorf("registry served digest %s for %s", topDigest, r)
	}
	if opts.PullPolicy == PullUpdate {
		if img, err := s.retag(r, repoDigest); err == nil && s.complete(img) {
			return img, nil
		} else if err != nil && !errors.Is(err, ErrImageNotFound) {
			return nil, err
		}
	}
	img, err := remoteImage(desc, platform(opts))
	if err != nil {
		return nil, err
	}
	var names []string
	if t := recordedTag(r); t != "" {
		names = append(names, t)
	}
	return s.importImage(ctx, img, names, []string{repoDigest}, opts)
}

// remoteImage returns the image desc describes: an image index is resolved
// to p's image by resolveIndex (never by Descriptor.Image, which follows
// nested indexes without bound).
func remoteImage(desc *remote.Descriptor, p v1.Platform) (v1.Image, error) {
	if !desc.MediaType.IsIndex() {
		img, err := desc.Image()
		if err != nil {
			return nil, fmt.Errorf("cannot resolve image manifest %s: %w", desc.Digest, err)
		}
		return img, nil
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("cannot read image index %s: %w", desc.Digest, err)
	}
	return resolveIndex(idx, p)
}

// recordedTag is the name:tag a fetch of r records: none when r has a
// digest. "name:tag@digest" names the digest's content (containerd drops
// the tag, Docker ignores it): the registry was not asked what the tag
// points at, so recording it would make name:tag resolve to whatever
// digest a pod spec paired it with.
func recordedTag(r Reference) string {
	if r.Digest != "" {
		return ""
	}
	return r.TagRef()
}

// retag points r's tag at the stored image with the given repo digest.
func (s *Store) retag(r Reference, repoDigest string) (*Image, error) {
	if img, ok := s.tagged(recordedTag(r), repoDigest); ok {
		return img, nil // nothing to record: no write
	}
	var rec *imageRecord
	err := s.update(func(tx *txn) error {
		id := tx.getRef(repoDigest)
		if id == "" {
			return &NotFoundError{Ref: repoDigest}
		}
		var err error
		if rec, err = tx.getImage(id); err != nil {
			return err
		}
		if rec == nil {
			return &NotFoundError{Ref: repoDigest}
		}
		if t := recordedTag(r); t != "" {
			if err := tx.setRef(rec, t, false); err != nil {
				return err
			}
		}
		return tx.putImage(rec)
	})
	if err != nil {
		return nil, err
	}
	return rec.image()
}

// tagged returns the image repoDigest names when tag ("": none) names it
// too.
func (s *Store) tagged(tag, repoDigest string) (*Image, bool) {
	var img *Image
	err := s.readIndex(func(x indexReader) error {
		id := x.getRef(repoDigest)
		if id == "" || (tag != "" && x.getRef(tag) != id) {
			return nil
		}
		rec, err := x.getImage(id)
		if err != nil || rec == nil {
			return err
		}
		img, err = rec.image()
		return err
	})
	return img, err == nil && img != nil
}

func platform(opts FetchOptions) v1.Platform {
	if opts.Platform != nil {
		return *opts.Platform
	}
	p := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	if runtime.GOARCH == "arm64" {
		p.Variant = "v8"
	}
	return p
}

// keychain chooses the credentials for an endpoint: explicit ones (upstream
// only), then rkt's dockerAuth config, then the user's docker config.json.
func keychain(ep endpoint, opts FetchOptions) authn.Keychain {
	if opts.Auth != nil && !ep.mirror {
		return staticKeychain{authn.FromConfig(authn.AuthConfig{
			Username:      opts.Auth.Username,
			Password:      opts.Auth.Password,
			IdentityToken: opts.Auth.IdentityToken,
			RegistryToken: opts.Auth.RegistryToken,
		})}
	}
	if c, ok := opts.Registries.AuthFor(ep.host); ok {
		return staticKeychain{&authn.Basic{Username: c.User, Password: c.Password}}
	}
	return authn.DefaultKeychain
}

type staticKeychain struct{ a authn.Authenticator }

// Resolve returns the same credentials for every registry.
func (k staticKeychain) Resolve(authn.Resource) (authn.Authenticator, error) { return k.a, nil }

// registryLies are go-containerregistry's messages (plain strings, no
// sentinel to test) for content that does not match what describes it.
var registryLies = []string{
	"error verifying sha256 checksum",
	"does not match requested digest",
	"does not match expected size",
	"error verifying size", // a blob shorter or longer than its descriptor
}

// classifyRegistryError marks a registry's lie (content that does not match
// its digest or length, a body cut short of its Content-Length) as
// ErrContentMismatch, so that callers can tell it from a network failure.
func classifyRegistryError(err error) error {
	if errors.Is(err, ErrContentMismatch) {
		return err
	}
	lie := errors.Is(err, io.ErrUnexpectedEOF)
	for _, m := range registryLies {
		lie = lie || strings.Contains(err.Error(), m)
	}
	if lie {
		return fmt.Errorf("%w (%w)", err, ErrContentMismatch)
	}
	return err
}
