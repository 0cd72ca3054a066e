package kubeletsvc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rkt/rkt/stage0"
)

// imageVolume resolves a CRI image volume, checked by imageVolumeMount
// (v.Image is the CRI ref, v.SubPath the image_sub_path): the image's
// unpacked layers, or the sub path directory of each, mounted read-only:
// the one layer bind-mounted, several stacked as a read-only overlay
// (lowerdirs only). It returns the mount and the image ID.
func (c *criService) imageVolume(ctx context.Context, v stage0.Mount) (stage0.Mount, string, error) {
	ref, sub := v.Image, v.SubPath
	img, err := c.store.ResolveImage(ref)
	if err != nil {
		return stage0.Mount{}, "", fmt.Errorf("image volume at %q: %w", v.Destination, err)
	}
	layers, err := c.store.LayerPaths(ctx, img)
	if err != nil {
		return stage0.Mount{}, "", fmt.Errorf("image volume %q: cannot unpack its layers: %w", ref, err)
	}
	var dirs []string // top layer first, as overlay's lowerdir wants
	for i := len(layers) - 1; i >= 0; i-- {
		d := filepath.Join(layers[i], sub)
		fi, err := os.Lstat(d)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return stage0.Mount{}, "", fmt.Errorf("image volume %q: %w", ref, err)
		}
		if !fi.IsDir() {
			return stage0.Mount{}, "", invalidf("image volume %q: sub path %q is not a directory", ref, sub)
		}
		dirs = append(dirs, d)
	}
	if len(dirs) == 0 {
		return stage0.Mount{}, "", invalidf("image volume %q: sub path %q does not exist in the image", ref, sub)
	}
	mnt := stage0.Mount{Destination: v.Destination, ReadOnly: true, Propagation: "private"}
	if len(dirs) == 1 {
		mnt.Source = dirs[0]
	} else {
		mnt.Type, mnt.Source = "overlay", "overlay"
		mnt.Options = []string{"lowerdir=" + strings.Join(dirs, ":")}
	}
	return mnt, img.ID, nil
}
