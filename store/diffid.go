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
	return digestLayer(zr, 0, read)
}

// digestLayer passes the decompressed stream zr to read and returns the
// digest of all of it. With a budget (> 0) read gets at most that many
// bytes: past it the rest is only digested, and the digest comes with
// errOverBudget.
func digestLayer(zr io.Reader, budget int64, read func(io.Reader) error) (string, error) {
	h := sha256.New()
	in := io.TeeReader(zr, h)
	var limit *budgetReader
	if budget > 0 {
		limit = &budgetReader{r: in, left: budget}
		in = limit
	}
	over := false
	if err := read(in); err != nil {
		if over = limit != nil && limit.over; !over {
			return "", err
		}
	}
	if _, err := io.Copy(h, zr); err != nil { // the rest, or padding after the end marker
		return "", err
	}
	sum := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if over {
		return sum, errOverBudget
	}
	return sum, nil
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
	// deferred: a zstd layer that needs a large window is not decoded
	// as it downloads (a slow registry would hold the window): its diff
	// ID is checked, and it is unpacked, from the stored blob
	deferred bool
	// partial: the unpacking stopped at its budget; the diff ID was
	// still checked, the tree is to be unpacked from the stored blob
	partial bool
}

func newDiffIDWriter() *diffIDWriter {
	return newLayerWriter(func(r io.Reader) (string, error) { return readStreamedLayer(r, 0, tarx.Validate) }, nil)
}

// newUnpackingWriter is a diffIDWriter that also extracts the layer into
// dir (a tree of the tree store): a pull decompresses each new layer once.
// At most budget decompressed bytes are extracted before the blob is
// verified: past it, the layer is unpacked once verified.
func newUnpackingWriter(dir string, budget int64) *diffIDWriter {
	return newLayerWriter(func(r io.Reader) (string, error) {
		return readStreamedLayer(r, budget, func(tr io.Reader) error {
			return tarx.Extract(tr, dir, tarx.Options{Whiteouts: tarx.WhiteoutOverlay})
		})
	}, isLocalStorageError)
}

// unverifiedBudget is how much of a layer of compressed size size is
// extracted as it downloads, before its digest is checked: ~16 times its
// size covers ordinary layers (gzip and zstd make file trees 2-10 times
// smaller), while a blob swapped on the way for a small stream of a huge
// content (a pinned digest through a mirror or an unverified TLS
// endpoint) fills no disk before the digest refuses it.
var unverifiedBudget = func(size int64) int64 {
	return 16*size + 64<<20
}

// errOverBudget: a streamed layer's extraction reached its budget.
var errOverBudget = errors.New("layer larger than what is unpacked before it is verified")

// budgetReader reads at most left bytes of r, then fails with
// errOverBudget.
type budgetReader struct {
	r    io.Reader
	left int64
	over bool
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.over = true
		return 0, errOverBudget
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// readStreamedLayer is readLayer for a layer as it downloads: a zstd
// stream that needs a large window is not decoded (tarx.ErrLargeWindow),
// and read gets at most budget bytes (digestLayer).
func readStreamedLayer(r io.Reader, budget int64, read func(io.Reader) error) (string, error) {
	zr, err := tarx.DecompressSmall(r)
	if err != nil {
		return "", err
	}
	defer zr.Close()
	return digestLayer(zr, budget, read)
}

// newLayerWriter runs consume on what is written to it; local, if set,
// tells the errors that are the host's rather than the blob's.
func newLayerWriter(consume func(io.Reader) (string, error), local func(error) bool) *diffIDWriter {
	pr, pw := io.Pipe()
	w := &diffIDWriter{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		w.sum, w.err = consume(pr)
		switch {
		case errors.Is(w.err, tarx.ErrLargeWindow):
			w.deferred, w.err = true, nil
		case errors.Is(w.err, errOverBudget):
			w.partial, w.err = true, nil
		}
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
	if errors.Is(err, tarx.ErrAttrTooLarge) { // ENOSPC from the layer's attribute
		return false
	}
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
// layer's diff ID (a deferred layer's is checked from the stored blob).
func (w *diffIDWriter) verify(l Layer) error {
	w.Close()
	if w.deferred {
		return nil
	}
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
