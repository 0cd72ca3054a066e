package store

import (
	"fmt"
	"os"
	"sync"
)

// written records the blobs and trees one fetch adds to the store, so
// that a failed fetch takes them out again.
type written struct {
	mu     sync.Mutex
	blobs  []string // digests
	chains []string // chain IDs of unpacked trees
	images []string // IDs of the image records the fetch created
}

func (w *written) addBlob(digest string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.blobs = append(w.blobs, digest)
	w.mu.Unlock()
}

func (w *written) addTree(chainID string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.chains = append(w.chains, chainID)
	w.mu.Unlock()
}

func (w *written) addImage(id string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.images = append(w.images, id)
	w.mu.Unlock()
}

// createdImage reports whether the fetch created the record of image id
// (rather than finding it, imported by another fetch).
func (w *written) createdImage(id string) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, x := range w.images {
		if x == id {
			return true
		}
	}
	return false
}

// rollback removes what a failed fetch stored that no recorded image uses
// (and, for trees, that is not mounted). Another fetch may be about to
// record an image using them: rollback runs only when it gets the sweep
// lock, i.e. when no fetch runs, and otherwise leaves them to GC. The
// caller must have released its own fetch lock.
func (s *Store) rollback(w *written) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.blobs) == 0 && len(w.chains) == 0 {
		return nil
	}
	sweep, err := s.trySweepLock()
	if err != nil || sweep == nil {
		return err
	}
	defer sweep.Close()
	var blobs, trees map[string]bool
	if err := s.view(func(tx *txn) error {
		blobs, trees, err = referenced(tx)
		return err
	}); err != nil {
		return err
	}
	for _, d := range w.blobs {
		h, err := digestHex(d)
		if err != nil || blobs[d] {
			continue
		}
		if err := os.Remove(s.blobPath(h)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("cannot remove blob %s: %w", d, err)
		}
	}
	if len(w.chains) == 0 {
		return nil
	}
	mounted, err := s.mountedTrees()
	if err != nil {
		return err
	}
	for _, c := range w.chains {
		h, err := digestHex(c)
		if err != nil || trees[h] || mounted[h] {
			continue
		}
		if err := s.removeTreeDir(h); err != nil {
			return err
		}
	}
	return nil
}
