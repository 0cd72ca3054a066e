package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/tarx"
)

// LayerPaths makes sure every layer of img is unpacked in the tree store
// and returns the tree directories, lowest layer first, ready to be used as
// overlayfs lowerdirs (whiteouts are in overlay form). Each layer is
// unpacked once (by chain ID) and shared by all images and pods.
func (s *Store) LayerPaths(ctx context.Context, img *Image) ([]string, error) {
	if err := s.cleanTemp(); err != nil {
		return nil, err
	}
	paths := make([]string, len(img.Layers))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(2)
	for i, l := range img.Layers {
		g.Go(func() error {
			p, err := s.ensureTree(ctx, l)
			paths[i] = p
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("cannot unpack image %s: %w", img.ID, err)
	}
	return paths, nil
}

// TreePath returns where the tree of a layer is (or would be) unpacked.
func (s *Store) TreePath(l Layer) (string, error) {
	h, err := digestHex(l.ChainID)
	if err != nil {
		return "", err
	}
	return s.treePath(h), nil
}

// ensureTree unpacks one layer into tree/<chain ID hex> unless it is there:
// into a locked temporary directory first, renamed into place when
// complete and verified, so a killed process leaves no half tree visible.
func (s *Store) ensureTree(ctx context.Context, l Layer) (string, error) {
	p, err := s.TreePath(l)
	if err != nil {
		return "", err
	}
	defer s.keys.lock("tree " + l.ChainID)()
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		now := time.Now()
		_ = os.Chtimes(p, now, now) // recency for GC's grace period
		return p, nil
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	tmp, lock, err := s.newTempDir("tree")
	if err != nil {
		return "", err
	}
	defer lock.Close()
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := s.unpackLayer(ctx, l, tmp, tarx.WhiteoutOverlay); err != nil {
		return "", err
	}
	if done, err = commitTree(l, tmp, lock, p); err != nil {
		return "", err
	}
	return p, nil
}

// commitTree moves a complete tree, unpacked in the temporary directory
// tmp (locked by lock), to p. moved is false when another process put the
// tree there first: tmp is the caller's to remove then.
func commitTree(l Layer, tmp string, lock *os.File, p string) (moved bool, err error) {
	if err := os.Chmod(tmp, 0o755); err != nil {
		return false, fmt.Errorf("cannot chmod tree: %w", err)
	}
	// Durable before visible: a power loss must not leave a renamed tree
	// with empty files.
	if err := unix.Syncfs(int(lock.Fd())); err != nil {
		return false, fmt.Errorf("cannot sync tree: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) {
			return false, nil
		}
		return false, fmt.Errorf("cannot move tree of layer %s into place: %w", l.Digest, err)
	}
	return true, nil
}

// unpackLayer extracts a layer blob into dir, verifying its diff ID.
func (s *Store) unpackLayer(ctx context.Context, l Layer, dir string, mode tarx.WhiteoutMode) error {
	f, err := s.OpenBlob(l.Digest)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = &missingLayerError{err: err}
		}
		return fmt.Errorf("layer %s is missing from the store (fetch the image again): %w", l.Digest, err)
	}
	defer f.Close()
	got, err := extractLayer(ctx, &ctxReader{ctx: ctx, r: f}, dir, mode)
	if err != nil {
		if ctx.Err() == nil && !isLocalStorageError(err) {
			return fmt.Errorf("layer %s is not a layer rkt can unpack: %w (%w)", l.Digest, err, ErrContentMismatch)
		}
		return fmt.Errorf("cannot unpack layer %s: %w", l.Digest, err)
	}
	return checkDiffID(l, got)
}

// missingLayerError is a layer blob that is not in the store (a removal in
// another process raced with its use): it still matches fs.ErrNotExist,
// as does the refusal of a layer whose hard link names a missing file,
// which is not one.
type missingLayerError struct{ err error }

func (e *missingLayerError) Error() string { return e.err.Error() }
func (e *missingLayerError) Unwrap() error { return e.err }

// RenderFlat writes the image's root filesystem, all layers applied in order
// with whiteouts removing what they hide, into dest (created if missing; it
// must be empty). It is the fallback for hosts without overlayfs and the
// implementation of `rkt image render`.
func (s *Store) RenderFlat(ctx context.Context, img *Image, dest string) (retErr error) {
	_, statErr := os.Lstat(dest)
	created := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return fmt.Errorf("cannot create render directory %q: %w", dest, err)
	}
	entries, err := os.ReadDir(dest)
	if err != nil {
		return fmt.Errorf("cannot read render directory %q: %w", dest, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("cannot render image %s into %q: directory not empty", img.ID, dest)
	}
	// A render that fails (or is interrupted) half-way takes back what it
	// wrote: a partial tree would pass for the image's root filesystem.
	defer func() {
		if retErr == nil {
			return
		}
		if created {
			os.RemoveAll(dest)
			return
		}
		if entries, err := os.ReadDir(dest); err == nil {
			for _, e := range entries {
				os.RemoveAll(filepath.Join(dest, e.Name()))
			}
		}
	}()
	for _, l := range img.Layers {
		if err := s.unpackLayer(ctx, l, dest, tarx.WhiteoutApply); err != nil {
			return fmt.Errorf("cannot render image %s: %w", img.ID, err)
		}
	}
	return nil
}
