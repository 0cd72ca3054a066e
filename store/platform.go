package store

import (
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// maxIndexDepth is how many image indexes deep an image may be, the one a
// reference names included: an index of per-OS indexes of images is
// legitimate; a deeper chain only makes a pull fetch manifest after
// manifest (go-containerregistry's Descriptor.Image follows any depth).
const maxIndexDepth = 4

// resolveIndex returns platform p's image in the image index idx, from a
// registry or an archive: the child for p (see childFor) if it is an
// image, else the image so found in that child index, at most
// maxIndexDepth indexes deep.
func resolveIndex(idx v1.ImageIndex, p v1.Platform) (v1.Image, error) {
	top, err := idx.Digest()
	if err != nil {
		return nil, fmt.Errorf("cannot read image index: %w", err)
	}
	digest := top
	for depth := 1; ; depth++ {
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, fmt.Errorf("cannot read image index %s: %w", digest, err)
		}
		d, ok := childFor(im, p)
		if !ok {
			return nil, noPlatformError(digest, im, p)
		}
		// Image and ImageIndex take the first child with d's digest,
		// which may claim another media type: go by the one they take (a
		// remote index's Image of an index would follow it without bound).
		d = firstByDigest(im, d.Digest)
		if !d.MediaType.IsIndex() {
			img, err := idx.Image(d.Digest)
			if err != nil {
				return nil, fmt.Errorf("cannot read image %s of image index %s: %w", d.Digest, digest, err)
			}
			return img, nil
		}
		if depth == maxIndexDepth {
			return nil, fmt.Errorf("cannot resolve image index %s for %s: its index %s is nested %d deep (at most %d): %w",
				top, p, d.Digest, depth+1, maxIndexDepth, ErrIndexTooDeep)
		}
		if idx, err = idx.ImageIndex(d.Digest); err != nil {
			return nil, fmt.Errorf("cannot read image index %s of image index %s: %w", d.Digest, digest, err)
		}
		digest = d.Digest
	}
}

// childFor returns the child of an index for p: the first whose platform
// satisfies p, else the first without a platform (an index that may hold
// images of several, or an image its author did not label), as
// containerd's images.Manifest chooses.
func childFor(im *v1.IndexManifest, p v1.Platform) (v1.Descriptor, bool) {
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.Satisfies(p) {
			return d, true
		}
	}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			return d, true
		}
	}
	return v1.Descriptor{}, false
}

// firstByDigest returns the first child of an index with digest h.
func firstByDigest(im *v1.IndexManifest, h v1.Hash) v1.Descriptor {
	for _, d := range im.Manifests {
		if d.Digest == h {
			return d
		}
	}
	return v1.Descriptor{Digest: h}
}

// noPlatformError says that the image index digest (its manifest im) has
// no image for want, and lists the platforms it has.
func noPlatformError(digest v1.Hash, im *v1.IndexManifest, want v1.Platform) error {
	var have []string
	for _, m := range im.Manifests {
		if m.Platform == nil {
			have = append(have, "(unspecified)")
			continue
		}
		have = append(have, m.Platform.String())
	}
	if len(have) == 0 {
		have = []string{"none"}
	}
	return &NoPlatformError{Index: digest.String(), Want: want.String(), Have: have}
}
