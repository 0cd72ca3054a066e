package stage0

import (
	"context"
	"fmt"
	"os"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
)

// resolveImageMounts resolves the images of the app's image volumes (their
// layers are unpacked) and returns them by mount index.
func (r *Runtime) resolveImageMounts(ctx context.Context, opts AppOptions) (map[int]Image, error) {
	out := map[int]Image{}
	for i, m := range opts.Mounts {
		if m.Image == "" {
			continue
		}
		if m.Source != "" || m.Volume != "" {
			return nil, fmt.Errorf("mount on %q: an image volume has no source or volume: %w", m.Destination, ErrInvalid)
		}
		img, err := r.cfg.Images.AppImage(ctx, m.Image)
		if err != nil {
			return nil, fmt.Errorf("cannot resolve image %q of the volume on %q: %w", m.Image, m.Destination, err)
		}
		out[i] = *img
	}
	return out, nil
}

// mountImageVolumes mounts each image volume read-only under the app
// directory and returns the host directory to bind into the app, by mount
// index (sub paths resolved inside the image).
func mountImageVolumes(appDir schema.AppDir, opts AppOptions, imgs map[int]Image) (map[int]string, error) {
	out := map[int]string{}
	for i, img := range imgs {
		dir := appDir.ImageVolume(i)
		if err := mountReadOnlyLayers(dir, img.Layers); err != nil {
			return nil, fmt.Errorf("image volume %q: %w", img.Name, err)
		}
		src := dir
		if sub := opts.Mounts[i].SubPath; sub != "" {
			p, err := securejoin.SecureJoin(dir, sub)
			if err != nil {
				return nil, fmt.Errorf("image volume %q: sub path %q: %w", img.Name, sub, err)
			}
			if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
				return nil, fmt.Errorf("image volume %q: sub path %q is not a directory of the image: %w", img.Name, sub, ErrInvalid)
			}
			src = p
		}
		out[i] = src
	}
	return out, nil
}

// mountReadOnlyLayers mounts layers (lowest first) read-only at dir: a
// read-only bind of a single layer, an overlay without upper dir for more.
func mountReadOnlyLayers(dir string, layers []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create %q: %w", dir, err)
	}
	if mounted, err := mountinfo.Mounted(dir); err == nil && mounted {
		return nil
	}
	switch len(layers) {
	case 0:
		return nil // an empty image: the empty directory is its filesystem
	case 1:
		if err := unix.Mount(layers[0], dir, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("cannot bind %q on %q: %w", layers[0], dir, err)
		}
		if err := unix.Mount("", dir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			unix.Unmount(dir, unix.MNT_DETACH)
			return fmt.Errorf("cannot make %q read-only: %w", dir, err)
		}
		return nil
	}
	lower := make([]string, 0, len(layers))
	for i := len(layers) - 1; i >= 0; i-- {
		lower = append(lower, layers[i])
	}
	data := "lowerdir=" + strings.Join(lower, ":")
	if err := unix.Mount("overlay", dir, "overlay", unix.MS_RDONLY, data); err != nil {
		return fmt.Errorf("cannot mount overlay on %q: %w", dir, err)
	}
	return nil
}
