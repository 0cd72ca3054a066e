package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/rkt/rkt/pkg/tarx/tarxtest"
)

// withBudget sets the unverified unpacking budget for the test.
func withBudget(t *testing.T, budget int64) {
	old := unverifiedBudget
	unverifiedBudget = func(int64) int64 { return budget }
	t.Cleanup(func() { unverifiedBudget = old })
}

// zstdLayer is a layer of the zstd stream raw.
func zstdLayer(t *testing.T, raw []byte) v1.Layer {
	t.Helper()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil },
		tarball.WithMediaType(types.OCILayerZStd))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestUnpackingWriterBudget: a layer streamed from a download is extracted
// up to its budget only, what follows is still digested, and the writer
// says the tree is partial (unpacked again once the blob is verified).
func TestUnpackingWriterBudget(t *testing.T) {
	const size, budget = 8 << 20, 1 << 20
	raw := tarxtest.ZstdZeros(20, size)
	want, err := uncompressedDigest(context.Background(), bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w := newUnpackingWriter(dir, budget)
	if _, err := io.Copy(w, bytes.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if w.err != nil || !w.partial || w.sum != want {
		t.Fatalf("over its budget: err %v, partial %v, digest %s; want nil, true, %s", w.err, w.partial, w.sum, want)
	}
	var extracted int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			extracted += fi.Size()
		}
		return nil
	})
	if extracted > budget {
		t.Errorf("%d bytes extracted, over the budget of %d", extracted, budget)
	}

	w = newUnpackingWriter(t.TempDir(), size*2)
	io.Copy(w, bytes.NewReader(raw))
	w.Close()
	if w.err != nil || w.partial || w.sum != want {
		t.Errorf("within its budget: err %v, partial %v, digest %s; want nil, false, %s", w.err, w.partial, w.sum, want)
	}
}

// TestPullLayerOverBudget: a layer larger than what is extracted before
// its blob is verified is unpacked from the verified blob: the pull
// succeeds, with the whole tree and no temporary tree left.
func TestPullLayerOverBudget(t *testing.T) {
	withBudget(t, 64<<10)
	reg := startRegistry(t)
	body := strings.Repeat("0123456789abcdef", 1<<14) // 256 KiB
	ref := reg.push(t, "budget/app:1", testImage(t, "A=1", []entry{{name: "etc/big", body: body}}))
	s := newStore(t)
	img, err := s.Pull(context.Background(), ref, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.TreePath(img.Layers[0])
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(p, "etc/big")); err != nil || string(got) != body {
		t.Errorf("the layer's file: %d bytes, %v; want %d", len(got), err, len(body))
	}
	if entries, _ := os.ReadDir(filepath.Join(s.Dir(), tmpDir)); len(entries) != 0 {
		t.Errorf("%d temporary entries left", len(entries))
	}
}

// TestPullSwappedBlobWithinBudget: a blob swapped on the way (a mirror, an
// unverified endpoint) for a small stream of a huge content, under a
// digest the manifest pins, is refused by its digest after at most the
// budget was extracted, and leaves nothing.
func TestPullSwappedBlobWithinBudget(t *testing.T) {
	withBudget(t, 1<<20)
	reg := startRegistry(t)
	random := make([]byte, 128<<10) // incompressible: the blob is as large
	rand.Read(random)
	img := testImage(t, "A=1", []entry{{name: "etc/random", body: string(random)}})
	ref := reg.push(t, "swapped/app:1", img)
	layers, _ := img.Layers()
	digest, _ := layers[0].Digest()
	size, _ := layers[0].Size()
	bomb := tarxtest.ZstdZeros(20, 1<<30) // 1 GiB of zeros in ~32 KB
	if int64(len(bomb))+8 > size {
		t.Fatalf("the swapped stream (%d bytes) is larger than the blob (%d)", len(bomb), size)
	}
	// a skippable frame pads it to the blob's size: only its digest differs
	pad := size - int64(len(bomb)) - 8
	bomb = binary.LittleEndian.AppendUint32(bomb, 0x184d2a50)
	bomb = binary.LittleEndian.AppendUint32(bomb, uint32(pad))
	bomb = append(bomb, make([]byte, pad)...)
	s := newStore(t)
	setHook(reg, func(w http.ResponseWriter, req *http.Request) bool {
		if req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, "/blobs/"+digest.String()) {
			return false
		}
		w.Write(bomb)
		return true
	})
	// what the pull extracts, in the store's temporary trees, watched
	// while it runs (digesting the 1 GiB takes ~1 s)
	done := make(chan struct{})
	largest := make(chan int64)
	go func() {
		most := int64(0)
		for {
			filepath.Walk(filepath.Join(s.Dir(), tmpDir), func(_ string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					most = max(most, fi.Size())
				}
				return nil
			})
			select {
			case <-done:
				largest <- most
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	fetchFails(t, s, ref, ErrContentMismatch, FetchOptions{Unpack: true})
	close(done)
	if most := <-largest; most > 1<<20 {
		t.Errorf("%d bytes of the swapped blob were extracted, over the budget of %d", most, 1<<20)
	}
	assertNothingStored(t, s)
}

// TestPullLargeWindowLayer: a zstd layer that needs a large window is not
// decoded as it downloads (a slow registry would hold one of the process's
// two large windows): it is stored, then its diff ID checked and its tree
// unpacked from the stored blob; a wrong diff ID is still refused.
func TestPullLargeWindowLayer(t *testing.T) {
	reg := startRegistry(t)
	img, err := mutate.AppendLayers(testImage(t, "A=1"), zstdLayer(t, tarxtest.ZstdZeros(27, 1<<20)))
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.push(t, "window/app:1", img)
	for _, unpack := range []bool{false, true} {
		s := newStore(t)
		got, err := s.Fetch(context.Background(), ref, FetchOptions{Unpack: unpack})
		if err != nil {
			t.Fatalf("unpack=%v: %v", unpack, err)
		}
		if unpack {
			p, err := s.TreePath(got.Layers[len(got.Layers)-1])
			if err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(filepath.Join(p, "zeros")); err != nil || fi.Size() != 1<<20 {
				t.Errorf("the layer's file: %v", err)
			}
		}
	}
	bad := reg.push(t, "window/bad:1", mutateDiffID(t, img))
	for _, unpack := range []bool{false, true} {
		s := newStore(t)
		fetchFails(t, s, bad, ErrContentMismatch, FetchOptions{Unpack: unpack})
		assertNothingStored(t, s)
	}
}
