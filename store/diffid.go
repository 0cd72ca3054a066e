package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/tarx"
)

// uncompressedDigest returns the digest of the decompressed content of a
// layer blob read from r (gzip, zstd or plain), which must be a tar stream
// that tarx.Extract accepts.
func uncompressedDigest(ctx context.Context, r io.Reader) (string, error) {
	return readLayer(ctx, r, tarx.Validate)
}

// extractLayer extracts the layer blob read from r (gzip, zstd or plain)
// into dir and returns the digest of its decompressed content.
func extractLayer(ctx context.Context, r io.Reader, dir string, mode tarx.WhiteoutMode) (string, error) {
	return readLayer(ctx, r, func(tr io.Reader) error { return tarx.Extract(tr, dir, tarx.Options{Whiteouts: mode}) })
}

// readLayer decompresses the layer blob read from r, passes its tar stream
// to read and returns the digest of the whole decompressed content.
func readLayer(ctx context.Context, r io.Reader, read func(io.Reader) error) (string, error) {
	zr, err := tarx.Decompress(ctx, r)
	if err != nil {
		return "", err
	}
	defer zr.Close()
	h := sha256.New()
	if err := read(io.TeeReader(zr, h)); err != nil {
		return "", err
	}
	if _, err := io.Copy(h, zr); err != nil { // padding after the end marker
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// diffIDWriter computes, in a goroutine, the uncompressed digest of the
// layer blob written to it, so that a download is verified against its
// diff ID as it is stored.
type diffIDWriter struct {
	pw      *io.PipeWriter
	done    chan struct{}
	sum     string
	err     error
	content bool // err is the blob's (not a layer rkt can unpack)
}

func newDiffIDWriter(ctx context.Context) *diffIDWriter {
	return newLayerWriter(func(r io.Reader) (string, error) { return uncompressedDigest(ctx, r) }, nil)
}

// newUnpackingWriter is a diffIDWriter that also extracts the layer into
// dir (a tree of the tree store): a pull decompresses each new layer once.
func newUnpackingWriter(ctx context.Context, dir string) *diffIDWriter {
	return newLayerWriter(func(r io.Reader) (string, error) {
		return extractLayer(ctx, r, dir, tarx.WhiteoutOverlay)
	}, isLocalStorageError)
}

// newLayerWriter runs consume on what is written to it; local, if set,
// tells the errors that are the host's rather than the blob's.
func newLayerWriter(consume func(io.Reader) (string, error), local func(error) bool) *diffIDWriter {
	pr, pw := io.Pipe()
	w := &diffIDWriter{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		w.sum, w.err = consume(pr)
		w.content = w.err != nil && (local == nil || !local(w.err))
		// Drain what follows a decompression error or the end of the
		// stream, so the writer never blocks.
		_, _ = io.Copy(io.Discard, pr)
	}()
	return w
}

// isLocalStorageError reports whether err is the host failing rather than
// the content: out of space, quota, memory or file descriptors, a
// read-only or failing disk, a feature the filesystem lacks.
func isLocalStorageError(err error) bool {
	for _, e := range []error{unix.ENOSPC, unix.EDQUOT, unix.ENOMEM, unix.EMFILE, unix.ENFILE, unix.EROFS, unix.EIO, unix.ENOTSUP} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Write passes p to the digest goroutine.
func (w *diffIDWriter) Write(p []byte) (int, error) { return w.pw.Write(p) }

// Close ends the stream and waits for the goroutine.
func (w *diffIDWriter) Close() {
	w.pw.Close()
	<-w.done
}

// verify ends the stream and checks its uncompressed digest against the
// layer's diff ID.
func (w *diffIDWriter) verify(l Layer) error {
	w.Close()
	if w.content {
		return fmt.Errorf("layer %s is not a layer rkt can unpack: %w (%w)", l.Digest, w.err, ErrContentMismatch)
	}
	if w.err != nil {
		return fmt.Errorf("cannot unpack layer %s: %w", l.Digest, w.err)
	}
	return checkDiffID(l, w.sum)
}

func checkDiffID(l Layer, got string) error {
	if got != l.DiffID {
		return fmt.Errorf("layer %s: uncompressed digest %s does not match the diff ID %s in the image config: %w", l.Digest, got, l.DiffID, ErrContentMismatch)
	}
	return nil
}

// verifyStoredDiffID checks the diff ID of a layer blob already in the
// store, unless a recorded image already pairs that blob with that diff
// ID (it was verified when that image was fetched).
func (s *Store) verifyStoredDiffID(ctx context.Context, l Layer) error {
	known := false
	err := s.view(func(tx *txn) error {
		recs, err := tx.allImages()
		for _, r := range recs {
			for _, rl := range r.Layers {
				known = known || (rl.Digest == l.Digest && rl.DiffID == l.DiffID)
			}
		}
		return err
	})
	if err != nil || known {
		return err
	}
	f, err := s.OpenBlob(l.Digest)
	if err != nil {
		return err
	}
	defer f.Close()
	got, err := uncompressedDigest(ctx, f)
	if err != nil {
		return fmt.Errorf("layer %s is not a layer rkt can unpack: %w (%w)", l.Digest, err, ErrContentMismatch)
	}
	return checkDiffID(l, got)
}
