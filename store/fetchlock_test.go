package store

import (
	"context"
	"path/filepath"
	"testing"
)

// A fetch running, or a pod being made from the store's images (Hold;
// here held by another process, as a fetch holds it), keeps RemoveImage
// and GC from deleting blobs and trees it may be about to record or
// mount; a GC after it collects them.
func TestSweepWaitsForHold(t *testing.T) {
	reg := startRegistry(t)
	ref := reg.push(t, "sweep/a:1", testImage(t, "IMG=sweep", []entry{{name: "a", body: "a"}}))
	s := newStore(t)
	ctx := context.Background()
	img, err := s.Fetch(ctx, ref, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.LayerPaths(ctx, img); err != nil {
		t.Fatal(err)
	}
	blobs, trees := countDir(t, s.Dir()+"/blobs/sha256"), countDir(t, s.Dir()+"/tree")

	other, err := Open(filepath.Dir(s.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	fetching, err := other.Hold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RemoveImage(ref, RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := countDir(t, s.Dir()+"/blobs/sha256"); n != blobs {
		t.Errorf("RemoveImage during a fetch removed blobs: %d left of %d", n, blobs)
	}
	res, err := s.GC(ctx, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.SweepDeferred || res.Blobs != 0 || countDir(t, s.Dir()+"/tree") != trees {
		t.Errorf("GC during a fetch: %+v, %d trees of %d; want the sweep deferred", res, countDir(t, s.Dir()+"/tree"), trees)
	}

	fetching.Close()
	res, err = s.GC(ctx, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.SweepDeferred || countDir(t, s.Dir()+"/blobs/sha256") != 0 || countDir(t, s.Dir()+"/tree") != 0 {
		t.Errorf("GC after the fetch: %+v; blobs %d, trees %d left, want none",
			res, countDir(t, s.Dir()+"/blobs/sha256"), countDir(t, s.Dir()+"/tree"))
	}
}
