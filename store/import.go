package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sync/errgroup"
)

// importImage copies img's blobs into the store (verified against their
// descriptors) and then records it, with the given names (name:tag) and
// repo digests (name@digest), in one transaction. Blobs become visible
// before the record, so a crash leaves at worst unreferenced blobs.
func (s *Store) importImage(ctx context.Context, img v1.Image, names, repoDigests []string, opts FetchOptions) (*Image, error) {
	rawManifest, err := img.RawManifest()
	if err != nil {
		return nil, fmt.Errorf("cannot get image manifest: %w", err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("cannot parse image manifest: %w", err)
	}
	mediaType, err := img.MediaType()
	if err != nil {
		return nil, fmt.Errorf("cannot get image media type: %w", err)
	}
	// A size of -1 is go-containerregistry's "unknown": it would read the
	// blob without a bound.
	if m.Config.Size < 0 {
		return nil, fmt.Errorf("image config %s has size %d: %w", m.Config.Digest, m.Config.Size, ErrContentMismatch)
	}
	if m.Config.Size > maxManifestSize {
		return nil, fmt.Errorf("image config %s has %d bytes: %w: configs are limited to %d bytes", m.Config.Digest, m.Config.Size, ErrTooLarge, maxManifestSize)
	}
	rawConfig, err := img.RawConfigFile()
	if err != nil {
		return nil, fmt.Errorf("cannot get image config: %w", err)
	}
	id := m.Config.Digest.String()
	if got := digestOf(rawConfig); got != id {
		return nil, fmt.Errorf("image config digest mismatch: manifest says %s, got %s: %w", id, got, ErrContentMismatch)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("cannot parse config of image %s: %w", id, err)
	}
	if len(cfg.RootFS.DiffIDs) != len(m.Layers) {
		return nil, fmt.Errorf("image %s: manifest has %d layers but config has %d diff IDs", id, len(m.Layers), len(cfg.RootFS.DiffIDs))
	}
	diffIDs := make([]string, len(m.Layers))
	for i, d := range cfg.RootFS.DiffIDs {
		diffIDs[i] = d.String()
	}
	chains := chainIDs(diffIDs)
	layers := make([]Layer, len(m.Layers))
	size := int64(len(rawManifest) + len(rawConfig))
	for i, l := range m.Layers {
		if _, err := digestHex(l.Digest.String()); err != nil {
			return nil, fmt.Errorf("image %s layer %d: %w", id, i, err)
		}
		if l.Size < 0 {
			return nil, fmt.Errorf("image %s layer %s has size %d: %w", id, l.Digest, l.Size, ErrContentMismatch)
		}
		layers[i] = Layer{Digest: l.Digest.String(), DiffID: diffIDs[i], ChainID: chains[i], MediaType: string(l.MediaType), Size: l.Size}
		size += l.Size
	}
	if err := s.fetchLayers(ctx, img, layers, opts); err != nil {
		return nil, err
	}
	if _, err := s.putBlobBytes(rawConfig, id, opts.written); err != nil {
		return nil, err
	}
	manifestDigest, err := s.putBlobBytes(rawManifest, "", opts.written)
	if err != nil {
		return nil, err
	}
	var rec *imageRecord
	created := false
	err = s.update(func(tx *txn) error {
		var err error
		rec, err = tx.getImage(id)
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		if rec == nil {
			rec = &imageRecord{Image: Image{ID: id, ImportedAt: now, LastUsedAt: now}}
			created = true
		}
		rec.ManifestDigest = manifestDigest
		rec.ManifestMediaType = string(mediaType)
		rec.Size = size
		rec.Layers = layers
		rec.ConfigRaw = rawConfig
		for _, n := range names {
			if err := tx.setRef(rec, n, false); err != nil {
				return err
			}
		}
		for _, d := range repoDigests {
			if err := tx.setRef(rec, d, true); err != nil {
				return err
			}
		}
		return tx.putImage(rec)
	})
	if err != nil {
		return nil, fmt.Errorf("cannot record image %s: %w", id, err)
	}
	if created {
		opts.written.addImage(id)
	}
	return rec.image()
}

// fetchLayers stores every layer blob not yet in the store, opts.Jobs at once.
func (s *Store) fetchLayers(ctx context.Context, img v1.Image, layers []Layer, opts FetchOptions) error {
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = 3
	}
	progress := opts.Progress
	if progress != nil {
		var mu sync.Mutex
		progress = func(p Progress) {
			mu.Lock()
			defer mu.Unlock()
			opts.Progress(p)
		}
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(jobs)
	for _, l := range layers {
		g.Go(func() error {
			unpacked, err := s.fetchLayer(ctx, img, l, progress, opts.written, opts.Unpack)
			if err != nil || !opts.Unpack || unpacked {
				return err
			}
			return s.unpackFetched(ctx, l, opts.written)
		})
	}
	return g.Wait()
}

// unpackFetched unpacks a fetched layer, recording the tree if it is new.
func (s *Store) unpackFetched(ctx context.Context, l Layer, w *written) error {
	p, err := s.TreePath(l)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(p); err != nil {
		w.addTree(l.ChainID)
	}
	_, err = s.ensureTree(ctx, l)
	return err
}

// fetchLayer stores a layer blob unless it is in the store, verifying its
// digest and size and, as it downloads, its diff ID. With unpack, a layer
// it downloads whose tree is not in the store is also unpacked from the
// same decompressed stream, and its tree moved into place once the blob
// is stored (unpacked then says so).
func (s *Store) fetchLayer(ctx context.Context, img v1.Image, l Layer, progress func(Progress), w *written, unpack bool) (unpacked bool, err error) {
	report := func(cur int64, done bool) {
		if progress != nil {
			progress(Progress{Digest: l.Digest, Total: l.Size, Current: cur, Done: done})
		}
	}
	defer s.keys.lock("blob " + l.Digest)()
	if s.hasBlob(l.Digest) {
		if err := s.verifyStoredDiffID(ctx, l); err != nil {
			return false, err
		}
		report(l.Size, true)
		return false, nil
	}
	h, err := v1.NewHash(l.Digest)
	if err != nil {
		return false, fmt.Errorf("invalid layer digest %q: %w", l.Digest, err)
	}
	layer, err := img.LayerByDigest(h)
	if err != nil {
		return false, fmt.Errorf("cannot get layer %s: %w", l.Digest, err)
	}
	treePath := ""
	if unpack {
		p, err := s.TreePath(l)
		if err != nil {
			return false, err
		}
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			treePath = p
		}
	}
	rc, err := layer.Compressed()
	if err != nil {
		return false, fmt.Errorf("cannot download layer %s: %w", l.Digest, err)
	}
	defer rc.Close()
	var dw *diffIDWriter
	var tmp string
	var tmpLock *os.File
	if treePath != "" {
		if tmp, tmpLock, err = s.newTempDir("tree"); err != nil {
			return false, err
		}
		defer tmpLock.Close()
		defer func() {
			if tmp != "" {
				os.RemoveAll(tmp)
			}
		}()
		dw = newUnpackingWriter(tmp, unverifiedBudget(l.Size))
	} else {
		dw = newDiffIDWriter()
	}
	defer dw.Close() // before the temporary tree goes
	r := io.TeeReader(&ctxReader{ctx: ctx, r: rc}, dw)
	onRead := func(n int64) { report(n, false) }
	verified := false // not when another process stored the blob meanwhile
	check := func() error {
		err := dw.verify(l)
		verified = err == nil
		return err
	}
	if _, _, err := s.putBlobChecked(r, l.Digest, l.Size, onRead, check); err != nil {
		return false, fmt.Errorf("cannot store layer %s: %w", l.Digest, err)
	}
	w.addBlob(l.Digest)
	if dw.deferred && verified && treePath == "" {
		// not unpacked here: its diff ID from the stored blob (else
		// unpackFetched checks it as it unpacks)
		if err := s.verifyStoredDiffID(ctx, l); err != nil {
			return false, err
		}
	}
	if tmp != "" && verified && !dw.deferred && !dw.partial {
		moved, err := commitTree(l, tmp, tmpLock, treePath)
		if err != nil {
			return false, err
		}
		if moved {
			tmp = ""
			w.addTree(l.ChainID)
		}
		unpacked = true
	}
	report(l.Size, true)
	return unpacked, nil
}

// ctxReader stops reading once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   interface{ Read([]byte) (int, error) }
}

// Read fails once the context is done.
func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
