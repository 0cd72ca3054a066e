package tarx

import (
	"archive/tar"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

// heapWatch reads from r and, every step bytes, collects garbage and
// notes the live heap: what Extract keeps while it reads.
type heapWatch struct {
	r        io.Reader
	n, next  int64
	step     int64
	maxLive  uint64
	baseline uint64
}

func (h *heapWatch) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.n += int64(n)
	if h.n >= h.next {
		h.next += h.step
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > h.maxLive {
			h.maxLive = ms.HeapAlloc
		}
	}
	return n, err
}

// TestExtractKeepsNoHeaders: Extract keeps of each directory only what it
// needs to set its times at the end of the layer, not its header: a PAX
// record that is no xattr is ignored but may be 1 MiB, and a layer of N
// such directories, a few KiB each once compressed, would hold N MiB of
// the unpacking process's memory (the kubelet-service's, for PullImage).
func TestExtractKeepsNoHeaders(t *testing.T) {
	const dirs = 96
	pad := strings.Repeat("x", 1000<<10)
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		for i := 0; i < dirs; i++ {
			h := &tar.Header{Name: fmt.Sprintf("d%04d/", i), Typeflag: tar.TypeDir, Mode: 0o700,
				ModTime: time.Unix(1600000000, 0), Format: tar.FormatPAX,
				PAXRecords: map[string]string{"RKT.pad": pad}}
			if err := tw.WriteHeader(h); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(tw.Close())
	}()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w := &heapWatch{r: pr, step: 8 << 20, baseline: ms.HeapAlloc}
	w.next = w.step
	if err := Extract(w, t.TempDir(), Options{NoSameOwner: true}); err != nil {
		t.Fatal(err)
	}
	grown := int64(w.maxLive) - int64(w.baseline)
	t.Logf("live heap grew by %d MiB while extracting %d directories", grown>>20, dirs)
	if grown > 32<<20 {
		t.Errorf("Extract held %d MiB for %d directory headers: it must not keep whole headers (PAX records) until the end", grown>>20, dirs)
	}
}
