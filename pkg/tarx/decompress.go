package tarx

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sync/semaphore"
)

// maxZstdWindow bounds the window a zstd layer may declare, which its
// decoder fills (512 MiB by default: a 67 KB layer took 527 MiB): the
// reference decoder's default limit (windowLog 27), above which zstd
// itself asks for --long or --memory.
const maxZstdWindow = 128 << 20

// smallZstdWindow is the largest window a zstd decoder may use without
// taking one of largeZstdWindows: what zstd up to -19 and klauspost's
// encoders use. Only --long and --ultra levels declare more.
const smallZstdWindow = 8 << 20

// largeZstdWindows bounds the zstd decoders of a window over
// smallZstdWindow that run at once in the process, so that their windows
// hold at most 256 MiB however many layers are pulled at once; others
// wait until one is closed.
var largeZstdWindows = semaphore.NewWeighted(2)

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// ErrLargeWindow: DecompressSmall refused a zstd stream that needs one of
// the process's large windows.
var ErrLargeWindow = errors.New("zstd stream needs a large window")

// Decompress returns the uncompressed stream of r, which may be gzip, zstd
// or plain (detected by magic bytes). A zstd stream whose first frame
// declares a large window waits, until ctx is done, for one of the
// process's large windows. Close releases the decompressor, not r.
func Decompress(ctx context.Context, r io.Reader) (io.ReadCloser, error) {
	return decompress(ctx, r, true)
}

// DecompressSmall is Decompress for a stream whose source may stall (a
// download): a zstd stream that needs a large window is refused with
// ErrLargeWindow instead of holding one while its source is slow.
func DecompressSmall(r io.Reader) (io.ReadCloser, error) {
	return decompress(context.Background(), r, false)
}

func decompress(ctx context.Context, r io.Reader, large bool) (io.ReadCloser, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(4)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("cannot read layer header: %w", err)
	}
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("corrupt gzip stream: %w", err)
		}
		return &wrapErr{r: zr, close: zr.Close, what: "gzip"}, nil
	case bytes.HasPrefix(head, zstdMagic):
		return newZstd(ctx, br, large)
	}
	return io.NopCloser(br), nil
}

// newZstd returns a decoder of the zstd stream of br, allowed the window
// class of its first frame: a later frame declaring more is refused. A
// large window is waited for if allowLarge, else refused.
func newZstd(ctx context.Context, br *bufio.Reader, allowLarge bool) (io.ReadCloser, error) {
	head, err := br.Peek(zstdMaxHeader)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("cannot read zstd frame header: %w", err)
	}
	window, large := uint64(smallZstdWindow), false
	if w := zstdWindow(head); w > maxZstdWindow {
		return nil, fmt.Errorf("corrupt zstd stream: window of %d bytes over the %d allowed: %w", w, maxZstdWindow, zstd.ErrWindowSizeExceeded)
	} else if w > smallZstdWindow {
		if !allowLarge {
			return nil, fmt.Errorf("zstd window of %d bytes: %w", w, ErrLargeWindow)
		}
		if err := largeZstdWindows.Acquire(ctx, 1); err != nil {
			return nil, fmt.Errorf("cannot wait for a zstd window of %d bytes: %w", w, err)
		}
		window, large = maxZstdWindow, true
	}
	opts := []zstd.DOption{zstd.WithDecoderMaxWindow(window)}
	if large {
		// Decoded synchronously, no goroutine of the decoder holds the
		// window after Close, so Close's collection frees it (the
		// concurrent decoder's goroutines exit after Close returns).
		opts = append(opts, zstd.WithDecoderConcurrency(1))
	}
	zr, err := zstd.NewReader(br, opts...)
	if err != nil {
		if large {
			largeZstdWindows.Release(1)
		}
		return nil, fmt.Errorf("corrupt zstd stream: %w", err)
	}
	w := &wrapErr{r: zr, what: "zstd", window: window}
	w.close = sync.OnceValue(func() error {
		zr.Close()
		if large {
			// Collect the window before the next decoder may allocate
			// one: else the heap grows by windows until the GC runs (four
			// were held, 527 MiB, with two in use).
			w.r, zr = closedReader{}, nil
			runtime.GC()
			largeZstdWindows.Release(1)
		}
		return nil
	})
	return w, nil
}

// closedReader is a closed decoder.
type closedReader struct{}

func (closedReader) Read([]byte) (int, error) { return 0, zstd.ErrDecoderClosed }

// zstdMaxHeader is the longest zstd frame header: magic, descriptor,
// window, a 4-byte dictionary ID and an 8-byte content size.
const zstdMaxHeader = 18

// zstdWindow returns the window the zstd frame header at the start of head
// declares (RFC 8878, 3.1.1.1), 0 if head is too short to tell.
func zstdWindow(head []byte) uint64 {
	if len(head) < 6 {
		return 0
	}
	desc := head[4]
	if desc&0x20 == 0 { // a window descriptor
		base := uint64(1) << (10 + head[5]>>3)
		return base + base/8*uint64(head[5]&7)
	}
	// A single segment: the window is the content size, after the
	// dictionary ID.
	off := 5 + []int{0, 1, 2, 4}[desc&3]
	n := []int{1, 2, 4, 8}[desc>>6]
	if len(head) < off+n {
		return 0
	}
	var size uint64
	for i := n - 1; i >= 0; i-- {
		size = size<<8 | uint64(head[off+i])
	}
	if n == 2 {
		size += 256
	}
	return size
}

// wrapErr says which decompressor failed.
type wrapErr struct {
	r      io.Reader
	close  func() error
	what   string
	window uint64 // of zstd: the largest allowed
}

// Read names the decompressor in errors.
func (w *wrapErr) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	switch {
	case err == nil || err == io.EOF:
	case errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded):
		err = fmt.Errorf("corrupt zstd stream: a frame's window is over the %d bytes its first frame allowed: %w", w.window, err)
	default:
		err = fmt.Errorf("corrupt %s stream: %w", w.what, err)
	}
	return n, err
}

// Close releases the decompressor.
func (w *wrapErr) Close() error { return w.close() }
