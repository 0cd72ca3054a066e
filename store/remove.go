package store

import (
	"fmt"
	"os"
)

// RemoveOptions tune RemoveImage.
type RemoveOptions struct {
	// Force removes the image even if a pod uses it (its layer trees are
	// then kept until GC, since running pods may have them mounted).
	Force bool
	// InUse holds the IDs of images used by pods (stage0.ImagesInUse).
	InUse map[string]bool
}

// RemoveImage removes the image ref resolves to, with every name and repo
// digest pointing at it, and the blobs and trees no other image uses (trees
// still mounted, e.g. as an app's overlay lowerdir, are kept). It
// refuses an image in opts.InUse (ErrImageInUse) unless forced. It returns
// the removed image.
func (s *Store) RemoveImage(ref string, opts RemoveOptions) (*Image, error) {
	var removed *imageRecord
	err := s.update(func(tx *txn) error {
		rec, err := resolve(tx, ref)
		if err != nil {
			return err
		}
		if opts.InUse[rec.ID] && !opts.Force {
			return &InUseError{ID: rec.ID}
		}
		if err := tx.deleteImage(rec); err != nil {
			return fmt.Errorf("cannot remove image %s: %w", rec.ID, err)
		}
		removed = rec
		return nil
	})
	if err != nil {
		return nil, err
	}
	img, err := removed.image()
	if err != nil {
		return nil, err
	}
	// A fetch in progress may be about to record an image sharing these
	// blobs or trees: leave them to a later GC then.
	sweep, err := s.trySweepLock()
	if err != nil || sweep == nil {
		return img, err
	}
	defer sweep.Close()
	keepBlobs, keepTrees, err := s.referenced()
	if err != nil {
		return img, err
	}
	t, err := s.newTrash()
	if err != nil {
		return img, err
	}
	err = s.trashUnused(t, removed, keepBlobs, keepTrees, opts.InUse[removed.ID])
	if emptyErr := t.empty(); err == nil {
		err = emptyErr
	}
	return img, err
}

// trashUnused puts into t the blobs of the removed image rec that no image
// keeps and, unless the image is in use (a pod may mount its trees: GC
// takes them later), its trees that no image keeps and nothing mounts.
func (s *Store) trashUnused(t *trash, rec *imageRecord, keepBlobs, keepTrees map[string]bool, inUse bool) error {
	for _, d := range imageBlobs(&rec.Image) {
		if keepBlobs[d] {
			continue
		}
		if h, err := digestHex(d); err == nil {
			if err := t.put(s.blobPath(h)); err != nil {
				return err
			}
		}
	}
	if inUse {
		return nil
	}
	mounted, err := s.mountedTrees()
	if err != nil {
		return err
	}
	for _, l := range rec.Layers {
		h, err := digestHex(l.ChainID)
		if err != nil || keepTrees[h] || mounted[h] {
			continue
		}
		if err := t.put(s.treePath(h)); err != nil {
			return err
		}
	}
	return nil
}

// imageBlobs lists the digests of the blobs an image is made of.
func imageBlobs(img *Image) []string {
	out := []string{img.ID, img.ManifestDigest}
	for _, l := range img.Layers {
		out = append(out, l.Digest)
	}
	return out
}

// referenced returns the blob digests and tree (chain ID hex) names that
// the recorded images use.
func referenced(tx *txn) (blobs, trees map[string]bool, err error) {
	recs, err := tx.allImages()
	if err != nil {
		return nil, nil, err
	}
	blobs, trees = map[string]bool{}, map[string]bool{}
	for _, r := range recs {
		for _, d := range imageBlobs(&r.Image) {
			blobs[d] = true
		}
		for _, l := range r.Layers {
			if h, err := digestHex(l.ChainID); err == nil {
				trees[h] = true
			}
		}
	}
	return blobs, trees, nil
}

// removeTreeDir removes a tree through a trash (see trash).
func (s *Store) removeTreeDir(hex string) error {
	t, err := s.newTrash()
	if err != nil {
		return err
	}
	if err := t.put(s.treePath(hex)); err != nil {
		t.empty()
		return err
	}
	return t.empty()
}

func removeTree(p string) error {
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("cannot remove %q: %w", p, err)
	}
	return nil
}
