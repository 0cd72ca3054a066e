package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/rkt/rkt/store/regconfig"
)

// PullPolicy says when Fetch goes to the registry.
type PullPolicy string

// Pull policies, as rkt's --pull-policy.
const (
	// PullNever uses only the store; a missing image is ErrImageNotFound.
	PullNever PullPolicy = "never"
	// PullNew fetches only images not in the store (the default).
	PullNew PullPolicy = "new"
	// PullUpdate asks the registry for the current digest and fetches it if
	// the store does not have it.
	PullUpdate PullPolicy = "update"
)

// ParsePullPolicy parses "never", "new" or "update" ("" is "new").
func ParsePullPolicy(s string) (PullPolicy, error) {
	switch PullPolicy(s) {
	case "":
		return PullNew, nil
	case PullNever, PullNew, PullUpdate:
		return PullPolicy(s), nil
	}
	return "", fmt.Errorf("invalid pull policy %q: want never, new or update", s)
}

// Auth are explicit registry credentials (rkt fetch --creds, CRI AuthConfig).
// They are sent to the image's own registry only, never to mirrors.
type Auth struct {
	Username      string
	Password      string
	IdentityToken string // OAuth2 refresh token
	RegistryToken string // bearer token sent as is
}

// Progress reports the download of one layer blob. Layers are fetched in
// parallel; the callbacks are serialized (never two at once).
type Progress struct {
	Digest  string // blob digest
	Total   int64  // blob size from its descriptor
	Current int64  // bytes received so far
	Done    bool   // the blob is stored and verified (or was already present)
}

// FetchOptions tune Fetch.
type FetchOptions struct {
	// PullPolicy for registry references ("" = PullNew). Archives and OCI
	// layouts are always imported.
	PullPolicy PullPolicy
	// Auth, when set, is used for the image's registry instead of the
	// configured or docker config.json credentials.
	Auth *Auth
	// Registries holds credentials and mirrors from rkt's config directories.
	Registries *regconfig.Config
	// InsecureHTTP allows plain HTTP to any registry (default: only to
	// loopback registries and mirrors configured insecure).
	InsecureHTTP bool
	// InsecureTLS skips TLS certificate verification.
	InsecureTLS bool
	// Progress, if set, is called as blobs are downloaded.
	Progress func(Progress)
	// Name is recorded (normalized) for an archive or layout image that
	// carries no name of its own.
	Name string
	// Platform to pick from multi-platform images (default: this host's).
	Platform *v1.Platform
	// Jobs is how many layers are fetched at once (default 3).
	Jobs int
	// Unpack also unpacks every layer into the tree store (as LayerPaths
	// does): a layer it downloads as it arrives, from the stream that
	// verifies its diff ID (one decompression), and a layer already stored
	// once found. Pull sets it.
	Unpack bool
	// RegistryOnly refuses references to files and directories of this
	// host (archives, OCI layouts, ACIs), for callers whose references come
	// from requests the host's files must not be exposed to: a CRI client's
	// image names come from pod specs.
	RegistryOnly bool
	// IdleTimeout fails the fetch once a registry sends nothing for that
	// long (0: $RKT_FETCH_IDLE_TIMEOUT, else DefaultIdleTimeout).
	IdleTimeout time.Duration

	written *written // what this fetch stored (set by Fetch, unless the caller set it)
}

// Fetch brings an image into the store and returns it. ref is an image ID
// or unique ID prefix of an image already in the store, a registry
// reference ("busybox", "docker://quay.io/x/y:1", "name@sha256:..."),
// "oci-archive:PATH[:tag]", "docker-archive:PATH[:name:tag]" (docker save),
// "oci:DIR[:tag]" (OCI image layout) or "aci:PATH" (an ACI of rkt 1.x). Two
// processes fetching the same image at once both succeed and the image is
// stored once.
func (s *Store) Fetch(ctx context.Context, ref string, opts FetchOptions) (*Image, error) {
	if opts.PullPolicy == "" {
		opts.PullPolicy = PullNew
	}
	if _, err := ParsePullPolicy(string(opts.PullPolicy)); err != nil {
		return nil, err
	}
	return s.underFetchLock(ctx, opts, func(opts FetchOptions) (*Image, error) {
		return s.fetch(ctx, ref, opts)
	})
}

// underFetchLock runs fn, which stores an image, under the fetch lock and
// removes what it stored if it fails.
func (s *Store) underFetchLock(ctx context.Context, opts FetchOptions, fn func(FetchOptions) (*Image, error)) (*Image, error) {
	if err := s.cleanTemp(); err != nil {
		return nil, err
	}
	// Blobs this fetch stores are referenced by no image until it records
	// one: keep GC and RemoveImage in other processes from sweeping them.
	fl, err := s.holdFetchLock(ctx)
	if err != nil {
		return nil, err
	}
	if opts.written == nil {
		opts.written = &written{}
	}
	img, err := fn(opts)
	fl.Close()
	if err != nil {
		// A refused image leaves nothing behind.
		if rbErr := s.rollback(opts.written); rbErr != nil {
			return nil, fmt.Errorf("%w (and cannot remove what the fetch stored: %v)", err, rbErr)
		}
		return nil, err
	}
	return img, nil
}

// localPrefixes are the transports that read this host's files.
var localPrefixes = []string{"oci-archive:", "docker-archive:", "oci:", "aci:"}

// IsLocalRef reports whether ref names a file or directory of this host
// rather than an image of a registry or of the store.
func IsLocalRef(ref string) bool {
	for _, p := range localPrefixes {
		if strings.HasPrefix(ref, p) {
			return true
		}
	}
	return false
}

// fetch is Fetch under the fetch lock.
func (s *Store) fetch(ctx context.Context, ref string, opts FetchOptions) (*Image, error) {
	if opts.RegistryOnly && IsLocalRef(ref) {
		return nil, fmt.Errorf("image %q names a file of this host; only registry images can be pulled here: %w", ref, ErrInvalidRef)
	}
	switch {
	case strings.HasPrefix(ref, "oci-archive:"):
		return s.fetchOCIArchive(ctx, strings.TrimPrefix(ref, "oci-archive:"), opts)
	case strings.HasPrefix(ref, "docker-archive:"):
		return s.fetchDockerArchive(ctx, strings.TrimPrefix(ref, "docker-archive:"), opts)
	case strings.HasPrefix(ref, "oci:"):
		return s.fetchOCILayout(ctx, strings.TrimPrefix(ref, "oci:"), opts)
	case strings.HasPrefix(ref, "aci:"):
		return s.importACI(ctx, strings.TrimPrefix(ref, "aci:"), ACIOptions{}, opts)
	}
	// An image ID or ID prefix names what is in the store: no registry
	// holds images by config digest.
	if strings.HasPrefix(ref, "sha256:") {
		return s.ResolveImage(ref)
	}
	// An ID prefix, unless the reference comes from a request that names
	// registry images only (a pod spec's "cafe" is docker.io/library/cafe).
	if isHexPrefix(ref) && !opts.RegistryOnly {
		img, err := s.ResolveImage(ref)
		if err == nil && img.ID[len("sha256:"):len("sha256:")+len(ref)] == ref {
			return img, nil
		}
		if errors.Is(err, ErrAmbiguousRef) {
			return nil, err
		}
	}
	r, err := ParseReference(ref)
	if err != nil {
		return nil, err
	}
	// A digest names immutable content: "update" has nothing to check.
	if opts.PullPolicy != PullUpdate || r.Digest != "" {
		img, err := s.ResolveImage(r.String())
		if err == nil && (opts.PullPolicy == PullNever || s.complete(img)) {
			return img, nil
		}
		if err != nil && !errors.Is(err, ErrImageNotFound) {
			return nil, err
		}
		if err != nil && opts.PullPolicy == PullNever {
			return nil, fmt.Errorf("image %s is not in the store and the pull policy is %q: %w", r, PullNever, &NotFoundError{Ref: r.String()})
		}
	}
	return s.fetchRemote(ctx, r, opts)
}

// complete reports whether every blob of img is in the store (a layer blob
// may be missing if its tree is unpacked). A recorded image can lack blobs
// if a concurrent removal deleted a blob it shares; Fetch then fetches it
// again.
func (s *Store) complete(img *Image) bool {
	if !s.hasBlob(img.ID) || !s.hasBlob(img.ManifestDigest) {
		return false
	}
	for _, l := range img.Layers {
		if s.hasBlob(l.Digest) {
			continue
		}
		if p, err := s.TreePath(l); err != nil {
			return false
		} else if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}
