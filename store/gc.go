package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rkt/rkt/pkg/fileperm"
)

// GCResult says what GC removed.
type GCResult struct {
	Images []string // IDs of removed images
	Blobs  int      // blobs removed
	Trees  int      // layer trees removed
	Bytes  int64    // bytes of blobs removed
	// SweepDeferred says blobs and trees were not swept because a fetch was
	// running; a later GC collects them.
	SweepDeferred bool
}

// GC removes images not in inUse that were not used (MarkUsed) or imported
// within grace, then blobs and layer trees that no remaining image uses
// and that are older than grace (trees still mounted are kept), and
// temporary files of killed processes.
func (s *Store) GC(ctx context.Context, grace time.Duration, inUse map[string]bool) (*GCResult, error) {
	res := &GCResult{}
	cutoff := time.Now().Add(-grace)
	err := s.update(func(tx *txn) error {
		recs, err := tx.allImages()
		if err != nil {
			return err
		}
		for _, r := range recs {
			last := r.LastUsedAt
			if last.IsZero() {
				last = r.ImportedAt
			}
			if inUse[r.ID] || last.After(cutoff) {
				continue
			}
			if err := tx.deleteImage(r); err != nil {
				return fmt.Errorf("cannot remove image %s: %w", r.ID, err)
			}
			res.Images = append(res.Images, r.ID)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, s.underSweepLock(res, func() error {
		keepBlobs, keepTrees, err := s.referenced()
		if err != nil {
			return err
		}
		return s.sweep(ctx, cutoff, keepBlobs, keepTrees, res)
	})
}

// referenced returns the blobs and trees the images of the index use. Read
// under the sweep lock, it holds until the lock is released: no fetch can
// record an image meanwhile.
func (s *Store) referenced() (blobs, trees map[string]bool, err error) {
	err = s.view(func(tx *txn) error {
		blobs, trees, err = referenced(tx)
		return err
	})
	return blobs, trees, err
}

// underSweepLock runs fn holding the sweep lock; while a fetch runs
// anywhere it only cleans temporary files and sets res.SweepDeferred.
// Either way it then removes the stale temporary files that atomic writes
// killed before their rename left in the store's root (the rkt 1.x
// import's record; no fetch writes there).
func (s *Store) underSweepLock(res *GCResult, fn func() error) (err error) {
	defer func() { err = errors.Join(err, fileperm.RemoveStaleTemp(s.dir)) }()
	sweep, err := s.trySweepLock()
	if err != nil {
		return err
	}
	if sweep == nil {
		res.SweepDeferred = true
		return s.cleanTemp()
	}
	defer sweep.Close()
	return fn()
}

// SweepUnreferenced removes, whatever their age, the blobs and layer trees
// no image references (what failed or interrupted pulls stored) and the
// temporary files of killed processes; images are kept. While a fetch runs
// anywhere it only cleans temporary files and sets SweepDeferred.
func (s *Store) SweepUnreferenced(ctx context.Context) (*GCResult, error) {
	res := &GCResult{}
	return res, s.underSweepLock(res, func() error {
		keepBlobs, keepTrees, err := s.referenced()
		if err != nil {
			return err
		}
		return s.sweep(ctx, time.Now(), keepBlobs, keepTrees, res)
	})
}

// sweep removes blobs and trees older than cutoff that are not kept (nor
// mounted), then stale temporary files. The caller holds the sweep lock.
func (s *Store) sweep(ctx context.Context, cutoff time.Time, keepBlobs, keepTrees map[string]bool, res *GCResult) error {
	if err := s.gcBlobs(ctx, cutoff, keepBlobs, res); err != nil {
		return err
	}
	mounted, err := s.mountedTrees()
	if err != nil {
		return err
	}
	for h := range mounted {
		keepTrees[h] = true
	}
	if err := s.gcTrees(ctx, cutoff, keepTrees, res); err != nil {
		return err
	}
	return s.cleanTemp()
}

func (s *Store) gcBlobs(ctx context.Context, cutoff time.Time, keep map[string]bool, res *GCResult) error {
	dir := filepath.Join(s.dir, blobsDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("cannot list blobs: %w", err)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if keep["sha256:"+e.Name()] {
			continue
		}
		fi, err := e.Info()
		if err != nil || fi.ModTime().After(cutoff) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("cannot remove blob %s: %w", e.Name(), err)
		}
		res.Blobs++
		res.Bytes += fi.Size()
	}
	return nil
}

func (s *Store) gcTrees(ctx context.Context, cutoff time.Time, keep map[string]bool, res *GCResult) error {
	dir := filepath.Join(s.dir, treeDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("cannot list trees: %w", err)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		// only trees this store makes (<chain ID hex>): rkt 1.x's
		// deps-sha512-* trees beside them are left alone
		if keep[e.Name()] || !isTreeName(e.Name()) {
			continue
		}
		fi, err := e.Info()
		if err != nil || fi.ModTime().After(cutoff) {
			continue
		}
		if err := s.removeTreeDir(e.Name()); err != nil {
			return err
		}
		res.Trees++
	}
	return nil
}

// isTreeName reports whether name is a tree of this store: 64 hex digits.
func isTreeName(name string) bool {
	if len(name) != 64 {
		return false
	}
	for _, c := range name {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
