package store

import (
	"archive/tar"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRefusedLayerNotRetried: Pull fetches an image again once when a
// layer blob vanished under it (an image gc in another process). A hostile
// layer whose hard link names a missing file fails its extraction with
// ENOENT too: it is refused at once, not taken for a vanished blob and
// downloaded a second time.
func TestRefusedLayerNotRetried(t *testing.T) {
	reg := startRegistry(t)
	img := testImage(t, "IMG=hl", []entry{{name: "link", typ: tar.TypeLink, linkname: "missing"}})
	ref := reg.push(t, "retry/hl:1", img)
	var blobGets atomic.Int64
	hook := func(w http.ResponseWriter, req *http.Request) bool {
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/sha256:") {
			blobGets.Add(1)
		}
		return false
	}
	reg.hook.Store(&hook)
	s := newStore(t)
	_, err := s.Pull(context.Background(), ref, PullOptions{})
	if err == nil {
		t.Fatal("pull of an image whose layer hard-links a missing file succeeded")
	}
	t.Logf("pull: %v", err)
	if errors.Is(err, ErrImageNotFound) {
		t.Fatalf("unexpected error %v", err)
	}
	// one config and one layer
	if n := blobGets.Load(); n != 2 {
		t.Errorf("%d blob downloads for an image of 2 blobs: the refused layer was taken for a vanished blob and fetched again", n)
	}
}

// TestVanishedLayerIsMissing: a layer blob removed under a recorded image
// (what Pull fetches again for) is still told apart.
func TestVanishedLayerIsMissing(t *testing.T) {
	reg := startRegistry(t)
	ref := reg.push(t, "retry/ok:1", testImage(t, "IMG=ok", []entry{{name: "f", body: "x"}}))
	s := newStore(t)
	ctx := context.Background()
	img, err := s.Fetch(ctx, ref, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := digestHex(img.Layers[0].Digest)
	if err := os.Remove(s.blobPath(h)); err != nil {
		t.Fatal(err)
	}
	_, err = s.LayerPaths(ctx, img)
	var missing *missingLayerError
	if !errors.As(err, &missing) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LayerPaths with a vanished blob: %v, want a missingLayerError matching fs.ErrNotExist", err)
	}
}
