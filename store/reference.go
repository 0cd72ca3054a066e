package store

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/rkt/rkt/store/regconfig"
)

// Reference is a parsed, normalized registry image reference.
type Reference struct {
	Registry   string // normalized host, "docker.io" for Docker Hub
	Repository string // e.g. "library/busybox"
	Tag        string // empty when only a digest was given
	Digest     string // "sha256:..." or empty
}

// ParseReference parses a registry reference ("busybox",
// "docker://quay.io/x/y:1", "name@sha256:...") and normalizes it: the
// default registry is docker.io, Docker Hub images get "library/", the
// default tag is "latest" when no digest is given.
func ParseReference(s string) (Reference, error) {
	ref, err := parseReference(s)
	if err != nil {
		return Reference{}, err
	}
	// The store records normalized names: they must parse back to the
	// same reference (normalizing can make a name too long, or turn an
	// odd registry name into a prefix).
	if again, err := parseReference(ref.String()); err != nil || again != ref {
		return Reference{}, fmt.Errorf("%w %q: its normalized form %q names another image or none", ErrInvalidRef, s, ref)
	}
	return ref, nil
}

func parseReference(s string) (Reference, error) {
	s = strings.TrimPrefix(s, "docker://")
	r, err := name.ParseReference(s)
	if err != nil {
		return Reference{}, fmt.Errorf("%w %q: %v", ErrInvalidRef, s, err)
	}
	ref := Reference{
		Registry:   regconfig.NormalizeRegistry(r.Context().RegistryStr()),
		Repository: r.Context().RepositoryStr(),
	}
	// go-containerregistry knows Docker Hub only by its lower-case names.
	if ref.Registry == "docker.io" && !strings.Contains(ref.Repository, "/") {
		ref.Repository = "library/" + ref.Repository
	}
	switch v := r.(type) {
	case name.Tag:
		ref.Tag = v.TagStr()
	case name.Digest:
		ref.Digest = v.DigestStr()
		// "name:tag@digest": keep the tag too.
		if at := strings.LastIndex(s, "@"); at > 0 {
			if t, err := name.NewTag(s[:at]); err == nil && strings.Contains(lastPathElem(s[:at]), ":") {
				ref.Tag = t.TagStr()
			}
		}
	}
	return ref, nil
}

func lastPathElem(s string) string {
	if i := strings.LastIndex(s, "/"); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Name returns registry/repository, e.g. docker.io/library/busybox.
func (r Reference) Name() string { return r.Registry + "/" + r.Repository }

// TagRef returns name:tag, or "" when the reference has no tag.
func (r Reference) TagRef() string {
	if r.Tag == "" {
		return ""
	}
	return r.Name() + ":" + r.Tag
}

// DigestRef returns name@digest for the given digest.
func (r Reference) DigestRef(digest string) string { return r.Name() + "@" + digest }

// String returns the normalized reference: name:tag, name@digest or
// name:tag@digest.
func (r Reference) String() string {
	s := r.Name()
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// NormalizeName normalizes a reference as the store records it, e.g.
// "busybox" -> "docker.io/library/busybox:latest".
func NormalizeName(s string) (string, error) {
	r, err := ParseReference(s)
	if err != nil {
		return "", err
	}
	return r.String(), nil
}

// remoteRef builds the go-containerregistry reference of r on the given
// registry host (the upstream or a mirror).
func (r Reference) remoteRef(host string, insecure bool) (name.Reference, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	s := host + "/" + r.Repository
	if r.Digest != "" {
		return name.NewDigest(s+"@"+r.Digest, opts...)
	}
	return name.NewTag(s+":"+r.Tag, opts...)
}
