package store

import (
	"context"
	"errors"
	"fmt"
)

// PullOptions tune Pull: a fetch, and what to do when its unpacking fails.
type PullOptions struct {
	FetchOptions
	// Status, if set, is told what Pull does after the downloads.
	Status func(string)
	// InUse returns the IDs of images pods use; such an image is never
	// removed by Pull's roll back (nil: none is in use).
	InUse func() (map[string]bool, error)
}

// Pull is the fetch policy of `rkt fetch` and the CRI's PullImage: fetch
// ref, then unpack its layers into the tree store so that the image is
// verified and ready to run. An image this call imported whose layers
// cannot be unpacked (corrupt or hostile) is removed again: a refused
// image leaves nothing behind. When a layer blob of the image has vanished
// (an image gc in another process raced with this pull), the image record
// is dropped and the pull done once more, unless a pod uses the image.
func (s *Store) Pull(ctx context.Context, ref string, opts PullOptions) (*Image, error) {
	for attempt := 1; ; attempt++ {
		last := attempt == 2
		img, err := s.pullOnce(ctx, ref, opts, !last)
		if err == nil {
			return img, nil
		}
		var missing *missingLayerError
		if last || img == nil || !errors.As(err, &missing) {
			return nil, err
		}
		var inUse map[string]bool
		if opts.InUse != nil {
			if inUse, err = opts.InUse(); err != nil {
				return nil, fmt.Errorf("cannot pull %s again: %w", ref, err)
			}
		}
		if _, rmErr := s.RemoveImage(img.ID, RemoveOptions{InUse: inUse}); rmErr != nil && !errors.Is(rmErr, ErrImageNotFound) {
			return nil, fmt.Errorf("%w (and cannot drop the damaged image: %v)", err, rmErr)
		}
	}
}

// pullOnce fetches and unpacks ref once. On an unpack failure it returns
// the image with the error; an image it imported itself is removed again,
// unless the failure is a missing blob and keepOnMissing is set (the
// caller retries then).
func (s *Store) pullOnce(ctx context.Context, ref string, opts PullOptions, keepOnMissing bool) (*Image, error) {
	fo := opts.FetchOptions
	fo.written = &written{}
	fo.Unpack = true // a layer it downloads is unpacked as it arrives
	img, err := s.Fetch(ctx, ref, fo)
	if err != nil {
		return nil, err
	}
	if opts.Status != nil {
		opts.Status("unpacking")
	}
	if _, err := s.LayerPaths(ctx, img); err != nil {
		var m *missingLayerError
		missing := errors.As(err, &m)
		// Only the record this pull created is its to remove: another
		// pull of the same image (started before or after) may have
		// imported it and answered with it, or a pod may use it.
		if !(missing && keepOnMissing) && fo.written.createdImage(img.ID) {
			var inUse map[string]bool
			if opts.InUse != nil {
				var iuErr error
				if inUse, iuErr = opts.InUse(); iuErr != nil {
					return nil, fmt.Errorf("%w (and cannot list the images in use: %v)", err, iuErr)
				}
			}
			if _, rmErr := s.RemoveImage(img.ID, RemoveOptions{InUse: inUse}); rmErr != nil && !errors.Is(rmErr, ErrImageNotFound) && !errors.Is(rmErr, ErrImageInUse) {
				return nil, fmt.Errorf("%w (and cannot remove the refused image: %v)", err, rmErr)
			}
		}
		return img, err
	}
	return img, nil
}
