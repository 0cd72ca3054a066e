package kubeletsvc

import (
	"fmt"

	"github.com/rkt/rkt/stage0"
)

// imageVolume names the image of a CRI image volume (a placeholder of
// imageVolumeMount) by its ID, the one the container's status reports.
// stage0 mounts it (AddApp: under a hold of the store, read-only, the sub
// path looked up inside it, the image in use while the container exists).
func (c *criService) imageVolume(v stage0.Mount) (stage0.Mount, error) {
	img, err := c.store.ResolveImage(v.Image)
	if err != nil {
		return stage0.Mount{}, fmt.Errorf("image volume at %q: %w", v.Destination, err)
	}
	v.Image = img.ID
	return v, nil
}
