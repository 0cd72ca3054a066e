package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/rkt/rkt/pkg/tarx"
)

// uncompressedDigest returns the digest of the decompressed content of a
// layer blob read from r (gzip, zstd or plain), which must be a tar stream
// that tarx.Extract accepts.
func uncompressedDigest(ctx context.Context, r io.Reader) (string, error) {
	zr, err := tarx.Decompress(ctx, r)
	if err != nil {
		return "", err
	}
	defer zr.Close()
	h := sha256.New()
	if err := tarx.Validate(io.TeeReader(zr, h)); err != nil {
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
	pw   *io.PipeWriter
	done chan struct{}
	sum  string
	err  error
}

func newDiffIDWriter(ctx context.Context) *diffIDWriter {
	pr, pw := io.Pipe()
	w := &diffIDWriter{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		w.sum, w.err = uncompressedDigest(ctx, pr)
		// Drain what follows a decompression error or the end of the
		// stream, so the writer never blocks.
		_, _ = io.Copy(io.Discard, pr)
	}()
	return w
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
	if w.err != nil {
		return fmt.Errorf("layer %s is not a layer rkt can unpack: %w (%w)", l.Digest, w.err, ErrContentMismatch)
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
