package store

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Image is an image of the store.
type Image struct {
	// ID is "sha256:<config digest>", the same on every registry and tag.
	ID string `json:"id"`
	// Names are normalized name:tag references, e.g. docker.io/library/busybox:latest.
	Names []string `json:"names,omitempty"`
	// RepoDigests are name@sha256:<manifest digest> references (the digest of
	// what the registry served: an index for multi-platform images).
	RepoDigests []string `json:"repoDigests,omitempty"`
	// ManifestDigest is the digest of this platform's image manifest.
	ManifestDigest string `json:"manifestDigest"`
	// ManifestMediaType is the media type of the stored manifest.
	ManifestMediaType string `json:"manifestMediaType"`
	// Size is the bytes the image takes in the blob store (manifest, config
	// and compressed layers).
	Size int64 `json:"size"`
	// Layers, lowest first.
	Layers []Layer `json:"layers"`
	// Config is the parsed image configuration (user, env, entrypoint, cmd,
	// working dir, labels, exposed ports, volumes...).
	Config *v1.ConfigFile `json:"-"`
	// ImportedAt is when the image was first stored.
	ImportedAt time.Time `json:"importedAt"`
	// LastUsedAt is when a pod last used the image (MarkUsed), or ImportedAt.
	LastUsedAt time.Time `json:"lastUsedAt"`
}

// Layer is one layer of an image.
type Layer struct {
	// Digest of the compressed blob, "sha256:...".
	Digest string `json:"digest"`
	// DiffID is the digest of the uncompressed tar.
	DiffID string `json:"diffID"`
	// ChainID identifies the layer with everything below it; its hex names
	// the unpacked tree.
	ChainID string `json:"chainID"`
	// MediaType of the blob.
	MediaType string `json:"mediaType"`
	// Size of the compressed blob in bytes.
	Size int64 `json:"size"`
}

// imageRecord is an Image as stored in the database; its raw config is kept
// in its own bucket (written when ConfigRaw is set).
type imageRecord struct {
	Image
	ConfigRaw []byte         `json:"-"`
	cfg       *v1.ConfigFile // parsed config, loaded by txn.getImage/allImages
}

func (r *imageRecord) image() (*Image, error) {
	img := r.Image
	img.Names = append([]string(nil), r.Names...)
	img.RepoDigests = append([]string(nil), r.RepoDigests...)
	img.Layers = append([]Layer(nil), r.Layers...)
	if r.cfg == nil {
		return nil, fmt.Errorf("config of image %s not loaded", r.ID)
	}
	img.Config = r.cfg.DeepCopy()
	return &img, nil
}

// parseConfig parses a raw image config.
func parseConfig(id string, raw []byte) (*v1.ConfigFile, error) {
	cfg, err := v1.ParseConfigFile(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("cannot parse config of image %s: %w", id, err)
	}
	return cfg, nil
}

// ShortID returns the first 12 hex characters of the image ID.
func (img *Image) ShortID() string {
	h := strings.TrimPrefix(img.ID, "sha256:")
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// ConfigDigest returns the image's config digest (its ID).
func (img *Image) ConfigDigest() string { return img.ID }

// chainIDs computes the chain IDs of a list of diff IDs (OCI image spec):
// ChainID(L0) = DiffID(L0); ChainID(Ln) = sha256(ChainID(Ln-1) + " " + DiffID(Ln)).
func chainIDs(diffIDs []string) []string {
	out := make([]string, len(diffIDs))
	for i, d := range diffIDs {
		if i == 0 {
			out[i] = d
			continue
		}
		out[i] = digestOf([]byte(out[i-1] + " " + d))
	}
	return out
}
