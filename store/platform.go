package store

import (
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// noPlatformError explains why an image index could not be resolved to
// an image: when none of its images is for want, it lists their platforms.
func noPlatformError(desc *remote.Descriptor, want v1.Platform, err error) error {
	idx, ierr := desc.ImageIndex()
	if ierr != nil {
		return fmt.Errorf("cannot resolve image index %s: %w", desc.Digest, err)
	}
	im, ierr := idx.IndexManifest()
	if ierr != nil {
		return fmt.Errorf("cannot resolve image index %s: %w", desc.Digest, err)
	}
	var have []string
	for _, m := range im.Manifests {
		if m.Platform == nil {
			have = append(have, "(unspecified)")
			continue
		}
		if m.Platform.Satisfies(want) {
			return fmt.Errorf("cannot resolve image index %s for %s: %w", desc.Digest, want, err)
		}
		have = append(have, m.Platform.String())
	}
	if len(have) == 0 {
		have = []string{"none"}
	}
	return &NoPlatformError{Index: desc.Digest.String(), Want: want.String(), Have: have}
}
