package tarx

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/rkt/rkt/pkg/tarx/tarxtest"
)

// TestZstdLargeWindowsPerProcess: a zstd decoder allocates the window its
// frame declares at its first block and fills it as content flows: an
// 8.7 KB layer declaring 128 MiB held 139 MiB of RSS while it was read,
// six such layers read at once 785 MiB. At most two decoders with a
// window over 8 MiB run at once in the process; a third waits until one
// is closed, and a decoder of a smaller window does not wait.
func TestZstdLargeWindowsPerProcess(t *testing.T) {
	open := func(windowLog byte) (io.ReadCloser, error) {
		r, err := Decompress(context.Background(), bytes.NewReader(tarxtest.ZstdZeros(windowLog, 1<<20)))
		if err != nil {
			return nil, err
		}
		if _, err := io.ReadFull(r, make([]byte, 1024)); err != nil {
			r.Close()
			return nil, err
		}
		return r, nil
	}
	type opened struct {
		r   io.ReadCloser
		err error
	}
	start := func(windowLog byte) chan opened {
		c := make(chan opened, 1)
		go func() {
			r, err := open(windowLog)
			c <- opened{r, err}
		}()
		return c
	}
	var held []io.ReadCloser
	defer func() {
		for _, r := range held {
			r.Close()
		}
	}()
	for range 2 {
		o := <-start(27)
		if o.err != nil {
			t.Fatal(o.err)
		}
		held = append(held, o.r)
	}
	select {
	case o := <-start(23):
		if o.err != nil {
			t.Fatal(o.err)
		}
		o.r.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("an 8 MiB window waited for the 128 MiB ones")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if r, err := Decompress(ctx, bytes.NewReader(tarxtest.ZstdZeros(27, 1<<20))); !errors.Is(err, context.DeadlineExceeded) {
		if r != nil {
			r.Close()
		}
		t.Fatalf("a wait for a 128 MiB window past its deadline: %v, want %v", err, context.DeadlineExceeded)
	}
	third := start(27)
	select {
	case o := <-third:
		if o.r != nil {
			o.r.Close()
		}
		t.Fatalf("a third 128 MiB window was decoded while two were open (error: %v)", o.err)
	case <-time.After(300 * time.Millisecond):
	}
	held[0].Close()
	held = held[1:]
	select {
	case o := <-third:
		if o.err != nil {
			t.Fatal(o.err)
		}
		o.r.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the window of a closed decoder was not given to a waiting one")
	}
}

// TestZstdLaterFrameWindow: a stream may hold several frames; one
// declaring a window over what its first frame's class allowed is refused
// (a small first frame takes no large window), a smaller one is read.
func TestZstdLaterFrameWindow(t *testing.T) {
	for _, tc := range []struct {
		first, later byte
		ok           bool
	}{{23, 23, true}, {27, 23, true}, {24, 27, true}, {23, 24, false}, {10, 27, false}} {
		stream := append(zstdFrame(tc.first), zstdFrame(tc.later)...)
		r, err := Decompress(context.Background(), bytes.NewReader(stream))
		if err == nil {
			_, err = io.Copy(io.Discard, r)
			r.Close()
		}
		if tc.ok && err != nil {
			t.Errorf("windows 2^%d then 2^%d refused: %v", tc.first, tc.later, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "its first frame allowed")) {
			t.Errorf("windows 2^%d then 2^%d: %v, want a refusal of the second", tc.first, tc.later, err)
		}
	}
}

// TestZstdWindowHeader: the window of a frame header, with a window
// descriptor or a single segment (the content size is the window).
func TestZstdWindowHeader(t *testing.T) {
	magic := []byte{0x28, 0xb5, 0x2f, 0xfd}
	for _, tc := range []struct {
		rest []byte
		want uint64
	}{
		{[]byte{0x00, (27 - 10) << 3}, 128 << 20},
		{[]byte{0x00, (20-10)<<3 | 3}, 1<<20 + 3<<17},
		{[]byte{0x20, 0x80}, 0x80},                              // single segment, 1-byte size
		{[]byte{0x60, 0x00, 0x01}, 256 + 256},                   // 2-byte size, plus 256
		{[]byte{0xa1, 0x07, 0x00, 0x00, 0x00, 0x10}, 256 << 20}, // 1-byte dictionary ID, 4-byte size
		{[]byte{0xe0, 0, 0, 0, 0, 0, 0, 0, 0x01}, 1 << 56},      // 8-byte size
		{[]byte{0xe0, 0, 0}, 0},                                 // cut short
		{[]byte{0x00}, 0},                                       // no descriptor
	} {
		if got := zstdWindow(append(append([]byte{}, magic...), tc.rest...)); got != tc.want {
			t.Errorf("header % x: window %d, want %d", tc.rest, got, tc.want)
		}
	}
}

// TestZstdClosedWindowCollected: closing a decoder of a large window
// collects the window before another decoder may take one, so the heap
// does not grow by windows that are garbage (with two decoders in use,
// four windows were held, 527 MiB, until the GC ran).
func TestZstdClosedWindowCollected(t *testing.T) {
	r, err := Decompress(context.Background(), bytes.NewReader(tarxtest.ZstdZeros(27, 1<<20)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(r, make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms) // HeapAlloc counts garbage not yet collected
	if ms.HeapAlloc > 64<<20 {
		t.Errorf("%d MiB of heap after a 128 MiB window's decoder was closed", ms.HeapAlloc>>20)
	}
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, zstd.ErrDecoderClosed) {
		t.Errorf("read after close: %v, want %v", err, zstd.ErrDecoderClosed)
	}
	r.Close()
}

// TestDecompressSmall: a stream whose source may stall (a download) is
// decoded only if it needs no large window: one that does is refused at
// once, without taking or waiting for one of the process's large windows
// (a slow registry would hold it for as long as it sends).
func TestDecompressSmall(t *testing.T) {
	// both large windows taken: a wait would block
	for range 2 {
		if err := largeZstdWindows.Acquire(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
	}
	defer largeZstdWindows.Release(2)
	if r, err := DecompressSmall(bytes.NewReader(tarxtest.ZstdZeros(27, 1<<20))); !errors.Is(err, ErrLargeWindow) {
		if r != nil {
			r.Close()
		}
		t.Fatalf("DecompressSmall of a 128 MiB window: %v, want ErrLargeWindow", err)
	}
	r, err := DecompressSmall(bytes.NewReader(tarxtest.ZstdZeros(23, 1<<20)))
	if err != nil {
		t.Fatalf("DecompressSmall of an 8 MiB window: %v", err)
	}
	defer r.Close()
	if n, err := io.Copy(io.Discard, r); err != nil || n != 512+1<<20+1024 {
		t.Errorf("read %d bytes, %v; want the tar of 1 MiB", n, err)
	}
}
