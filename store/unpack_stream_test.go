package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/tarx"
)

// TestFetchUnpackRefusesHostileLayer: a layer unpacked as it downloads is
// refused as one checked first is: the error is the content's, nothing is
// stored (no blob, tree or temporary tree) and nothing is written outside
// the store.
func TestFetchUnpackRefusesHostileLayer(t *testing.T) {
	reg := startRegistry(t)
	for name, es := range map[string][]entry{
		"dotdot name":       {{name: "ok", body: "x"}, {name: "../../escaped", body: "x"}},
		"hard link outside": {{name: "ok", body: "x"}, {name: "h", typ: '1', linkname: "../../etc/passwd"}},
	} {
		ref := reg.push(t, "hostile/"+strings.ReplaceAll(name, " ", "-")+":1", testImage(t, "A=1", es))
		for _, unpack := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/unpack=%v", name, unpack), func(t *testing.T) {
				parent := t.TempDir()
				s, err := Open(filepath.Join(parent, "store"))
				if err != nil {
					t.Fatal(err)
				}
				err = fetchFails(t, s, ref, ErrContentMismatch, FetchOptions{Unpack: unpack})
				if !errors.Is(err, tarx.ErrUnsafePath) {
					t.Errorf("error %v does not wrap tarx.ErrUnsafePath", err)
				}
				assertNothingStored(t, s)
				entries, _ := os.ReadDir(parent)
				if len(entries) != 1 {
					t.Errorf("the fetch wrote beside the store: %d entries in its parent", len(entries))
				}
			})
		}
	}
}

// TestFetchUnpackCorruptTar: a truncated tar stream unpacked as it
// downloads is refused as content, and leaves nothing.
func TestFetchUnpackCorruptTar(t *testing.T) {
	reg := startRegistry(t)
	raw := tarBytes(t, []entry{{name: "a", body: strings.Repeat("a", 5000)}})
	ref := reg.push(t, "corrupt/unpack:1", mustAppend(t, layerOf(t, raw[:1024])))
	s := newStore(t)
	err := fetchFails(t, s, ref, ErrContentMismatch, FetchOptions{Unpack: true})
	if !strings.Contains(err.Error(), "tar") {
		t.Errorf("error does not say tar: %v", err)
	}
	assertNothingStored(t, s)
}

// TestPullUnpacksEveryLayer: after a pull every layer's tree is in place,
// with its files, and no temporary tree is left.
func TestPullUnpacksEveryLayer(t *testing.T) {
	reg := startRegistry(t)
	ref := reg.push(t, "pull/layers:1", testImage(t, "A=1",
		[]entry{{name: "etc/one", body: "1"}}, []entry{{name: "etc/two", body: "2"}}))
	s := newStore(t)
	img, err := s.Pull(context.Background(), ref, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"etc/one", "etc/two"} {
		p, err := s.TreePath(img.Layers[i])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(p, want)); err != nil {
			t.Errorf("layer %d: %v", i, err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(s.Dir(), tmpDir)); len(entries) != 0 {
		t.Errorf("%d temporary entries left", len(entries))
	}
}

// TestFetchUnpackBlobStoredMeanwhile: when another process stores the blob
// while this fetch downloads it, the fetch takes the stored blob and
// unpacks the tree from it; the tree it began is not moved into place.
func TestFetchUnpackBlobStoredMeanwhile(t *testing.T) {
	reg := startRegistry(t)
	img := testImage(t, "A=1", []entry{{name: "etc/motd", body: "hello"}})
	ref := reg.push(t, "race/app:1", img)
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	digest, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	blob, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(t)
	stored := false
	setHook(reg, func(w http.ResponseWriter, req *http.Request) bool {
		if !stored && req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/blobs/"+digest.String()) {
			stored = true // "another process" stores it as the download starts
			if err := fileperm.WriteFile(s.blobPath(digest.Hex), blob, fileperm.Shared); err != nil {
				t.Error(err)
			}
		}
		return false
	})
	got, err := s.Fetch(context.Background(), ref, FetchOptions{Unpack: true})
	if err != nil {
		t.Fatal(err)
	}
	if !stored {
		t.Fatal("the layer was not downloaded")
	}
	p, err := s.TreePath(got.Layers[0])
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(p, "etc/motd")); err != nil || string(b) != "hello" {
		t.Errorf("tree: %q, %v", b, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(s.Dir(), tmpDir)); len(entries) != 0 {
		t.Errorf("%d temporary entries left", len(entries))
	}
}

// TestLayerWriterErrorClass: a layer writer's failure is the content's
// (ErrContentMismatch) unless it is the host's storage failing.
func TestLayerWriterErrorClass(t *testing.T) {
	l := Layer{Digest: "sha256:" + strings.Repeat("a", 64), DiffID: "sha256:" + strings.Repeat("b", 64)}
	for _, c := range []struct {
		err     error
		content bool
	}{
		{fmt.Errorf("cannot extract %q: %w", "x", unix.ENOSPC), false},
		{fmt.Errorf("cannot extract %q: %w", "x", unix.EIO), false},
		{fmt.Errorf("cannot open %q: %w", "x", unix.EMFILE), false},
		{fmt.Errorf("corrupt tar stream: %w", io.ErrUnexpectedEOF), true},
		{fmt.Errorf("%q: %w", "../x", tarx.ErrUnsafePath), true},
		{fmt.Errorf("cannot set xattr: %w (%w)", tarx.ErrAttrTooLarge, unix.ENOSPC), true},
	} {
		w := newLayerWriter(func(io.Reader) (string, error) { return "", c.err }, isLocalStorageError)
		err := w.verify(l)
		if !errors.Is(err, c.err) {
			t.Errorf("%v: error %v does not wrap it", c.err, err)
		}
		if errors.Is(err, ErrContentMismatch) != c.content {
			t.Errorf("%v: content mismatch %v, want %v (%v)", c.err, !c.content, c.content, err)
		}
	}
}
