package stage0

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/rkt/rkt/store"
)

// StoreImages returns an ImageSource that resolves references in the image
// store (no fetching) and unpacks their layers in its treestore.
func StoreImages(s *store.Store) ImageSource { return storeImages{s} }

type storeImages struct{ s *store.Store }

// AppImage resolves ref in the store, unpacks its layers and marks it used.
func (si storeImages) AppImage(ctx context.Context, ref string) (*Image, error) {
	img, mark, err := si.s.ResolveImageForUse(ref)
	if err != nil {
		return nil, err
	}
	layers, err := si.s.LayerPaths(ctx, img)
	if err != nil {
		return nil, fmt.Errorf("cannot unpack the layers of image %s: %w", img.ID, err)
	}
	if mark {
		if err := si.s.MarkUsed(img.ID); err != nil {
			return nil, err
		}
	}
	name := ref
	if looksLikeID(ref) && len(img.Names) > 0 {
		name = img.Names[0]
	}
	return &Image{ID: img.ID, Name: name, Config: img.Config, Layers: layers}, nil
}

// Hold keeps the store's blobs and trees (store.Store.Hold).
func (si storeImages) Hold(ctx context.Context) (io.Closer, error) { return si.s.Hold(ctx) }

// looksLikeID reports whether ref is an image ID or ID prefix rather than a
// name.
func looksLikeID(ref string) bool {
	h := strings.TrimPrefix(ref, "sha256:")
	if h != ref {
		return true
	}
	if len(h) < 4 {
		return false
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
