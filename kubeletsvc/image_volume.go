package kubeletsvc

import (
	"fmt"

	"github.com/rkt/rkt/stage0"
)

// imageVolume names the image of a CRI image volume (a placeholder of
// imageVolumeMount) by its ID, so that stage0, which mounts it (AddApp:
// the image resolved under a hold of the store, its layers mounted
// read-only in the app's directory, the sub path looked up inside them and
// the image recorded as in use while the container exists), mounts the
// image whose ID the container's status reports. It returns the mount and
// the image ID.
func (c *criService) imageVolume(v stage0.Mount) (stage0.Mount, string, error) {
	img, err := c.store.ResolveImage(v.Image)
	if err != nil {
		return stage0.Mount{}, "", fmt.Errorf("image volume at %q: %w", v.Destination, err)
	}
	v.Image = img.ID
	return v, img.ID, nil
}
