package tarx

import (
	"bufio"
	"bytes"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// maxZstdWindow bounds the window a zstd layer may declare, which its
// decoder fills (512 MiB by default: a 67 KB layer took 527 MiB): the
// reference decoder's default limit (windowLog 27), above which zstd
// itself asks for --long or --memory.
const maxZstdWindow = 128 << 20

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// Decompress returns the uncompressed stream of r, which may be gzip, zstd
// or plain (detected by magic bytes). Close releases the decompressor, not r.
func Decompress(r io.Reader) (io.ReadCloser, error) {
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
		zr, err := zstd.NewReader(br, zstd.WithDecoderMaxWindow(maxZstdWindow))
		if err != nil {
			return nil, fmt.Errorf("corrupt zstd stream: %w", err)
		}
		return &wrapErr{r: zr, close: func() error { zr.Close(); return nil }, what: "zstd"}, nil
	}
	return io.NopCloser(br), nil
}

// wrapErr says which decompressor failed.
type wrapErr struct {
	r     io.Reader
	close func() error
	what  string
}

// Read names the decompressor in errors.
func (w *wrapErr) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("corrupt %s stream: %w", w.what, err)
	}
	return n, err
}

// Close releases the decompressor.
func (w *wrapErr) Close() error { return w.close() }
