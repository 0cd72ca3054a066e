package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func countDir(t *testing.T, p string) int {
	t.Helper()
	e, err := os.ReadDir(p)
	if err != nil {
		t.Fatal(err)
	}
	return len(e)
}

// TestRemoveImage removes images deleting at once and in the background:
// either way their names, blobs and trees are gone when RemoveImage
// returns, and the background leaves nothing once done.
func TestRemoveImage(t *testing.T) {
	for _, bg := range []bool{false, true} {
		t.Run(fmt.Sprint("background=", bg), func(t *testing.T) { testRemoveImage(t, bg) })
	}
}

func testRemoveImage(t *testing.T, bg bool) {
	reg := startRegistry(t)
	base := []entry{{name: "base", body: "shared"}}
	a := testImage(t, "IMG=a", base, []entry{{name: "a", body: "a"}})
	b := testImage(t, "IMG=b", base, []entry{{name: "b", body: "b"}})
	refA := reg.push(t, "rm/a:1", a)
	reg.push(t, "rm/a:2", a)
	refB := reg.push(t, "rm/b:1", b)
	s := newStore(t)
	if bg {
		s.RemovesInBackground()
	}
	ctx := context.Background()
	imgA, err := s.Fetch(ctx, refA, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fetch(ctx, reg.host+"/rm/a:2", FetchOptions{}); err != nil {
		t.Fatal(err)
	}
	imgB, err := s.Fetch(ctx, refB, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range []*Image{imgA, imgB} {
		if _, err := s.LayerPaths(ctx, img); err != nil {
			t.Fatal(err)
		}
	}
	if n := countDir(t, s.Dir()+"/tree"); n != 3 {
		t.Fatalf("%d trees, want 3 (one shared)", n)
	}

	inUse := map[string]bool{imgA.ID: true}
	if _, err := s.RemoveImage(refA, RemoveOptions{InUse: inUse}); !errors.Is(err, ErrImageInUse) {
		t.Fatalf("removing an in-use image: err = %v, want ErrImageInUse", err)
	}
	removed, err := s.RemoveImage(refA, RemoveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if removed.ID != imgA.ID || len(removed.Names) != 2 {
		t.Errorf("removed %s with names %v, want %s with both tags", removed.ID, removed.Names, imgA.ID)
	}
	for _, r := range []string{refA, reg.host + "/rm/a:2", imgA.ID} {
		if _, err := s.ResolveImage(r); !errors.Is(err, ErrImageNotFound) {
			t.Errorf("%s still resolves (err %v)", r, err)
		}
	}
	if n := countDir(t, s.Dir()+"/tree"); n != 2 {
		t.Errorf("%d trees after removal, want 2 (B's two)", n)
	}
	// B intact: shared base blob kept.
	if _, err := s.LayerPaths(ctx, imgB); err != nil {
		t.Errorf("image B broken after removing A: %v", err)
	}
	if s.hasBlob(imgA.Layers[1].Digest) || !s.hasBlob(imgA.Layers[0].Digest) || s.hasBlob(imgA.ID) {
		t.Error("blobs: A's own layer and config must be gone, the shared layer kept")
	}
	if _, err := s.RemoveImage(refA, RemoveOptions{}); !errors.Is(err, ErrImageNotFound) {
		t.Errorf("second removal: err = %v, want ErrImageNotFound", err)
	}
	// Forced removal of an in-use image keeps its trees for running pods.
	if _, err := s.RemoveImage(imgB.ID, RemoveOptions{Force: true, InUse: map[string]bool{imgB.ID: true}}); err != nil {
		t.Fatal(err)
	}
	if n := countDir(t, s.Dir()+"/tree"); n != 2 {
		t.Errorf("%d trees after forced removal, want 2 kept", n)
	}
	s.WaitRemovals()
	if n := countDir(t, s.tmpPath()); n != 0 {
		t.Errorf("%d temporary entries left after the removals", n)
	}
}

func backdate(t *testing.T, s *Store, id string, when time.Time) {
	t.Helper()
	err := s.update(func(tx *txn) error {
		r, err := tx.getImage(id)
		if err != nil || r == nil {
			return errors.Join(err, errors.New("no such image"))
		}
		r.LastUsedAt, r.ImportedAt = when, when
		return tx.putImage(r)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestGC(t *testing.T) {
	reg := startRegistry(t)
	s := newStore(t)
	ctx := context.Background()
	fetch := func(tag, env string) *Image {
		ref := reg.push(t, tag, testImage(t, env, []entry{{name: "f", body: env}}))
		img, err := s.Fetch(ctx, ref, FetchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.LayerPaths(ctx, img); err != nil {
			t.Fatal(err)
		}
		return img
	}
	old, used, fresh := fetch("gc/old:1", "GC=old"), fetch("gc/used:1", "GC=used"), fetch("gc/fresh:1", "GC=fresh")
	longAgo := time.Now().Add(-2 * time.Hour)
	backdate(t, s, old.ID, longAgo)
	backdate(t, s, used.ID, longAgo)

	res, err := s.GC(ctx, time.Hour, map[string]bool{used.ID: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Images) != 1 || res.Images[0] != old.ID {
		t.Fatalf("GC removed images %v, want [%s]", res.Images, old.ID)
	}
	if res.Blobs != 0 || res.Trees != 0 || !s.hasBlob(old.Layers[0].Digest) {
		t.Errorf("GC removed %d blobs and %d trees younger than the grace period", res.Blobs, res.Trees)
	}
	// Once the unreferenced blobs and tree are older than the grace period, they go.
	tree, _ := s.TreePath(old.Layers[0])
	for _, p := range []string{tree, s.blobPath(old.Layers[0].Digest[7:]), s.blobPath(old.ID[7:]), s.blobPath(old.ManifestDigest[7:])} {
		if err := os.Chtimes(p, longAgo, longAgo); err != nil {
			t.Fatal(err)
		}
	}
	// A temp file of a killed fetch (unlocked) goes, a live one (locked) stays.
	stale, _ := os.Create(s.tmpPath() + "/blob-stale")
	stale.Close()
	os.Chtimes(stale.Name(), longAgo, longAgo)
	live, err := s.newTempFile("blob")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	os.Chtimes(live.Name(), longAgo, longAgo)

	res, err = s.GC(ctx, time.Hour, map[string]bool{used.ID: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Images) != 0 || res.Blobs != 3 || res.Trees != 1 {
		t.Errorf("second GC: %+v, want 0 images, 3 blobs, 1 tree", res)
	}
	if _, err := os.Stat(stale.Name()); !os.IsNotExist(err) {
		t.Errorf("stale temp file kept: %v", err)
	}
	if _, err := os.Stat(live.Name()); err != nil {
		t.Errorf("locked temp file removed: %v", err)
	}
	for _, img := range []*Image{used, fresh} {
		if _, err := s.LayerPaths(ctx, img); err != nil {
			t.Errorf("image %s broken by GC: %v", img.ID, err)
		}
	}
}

func TestMarkUsedProtectsFromGC(t *testing.T) {
	reg := startRegistry(t)
	s := newStore(t)
	ctx := context.Background()
	img, err := s.Fetch(ctx, reg.push(t, "mu/img:1", testImage(t, "MU=1", []entry{{name: "m", body: "m"}})), FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	backdate(t, s, img.ID, time.Now().Add(-2*time.Hour))
	if err := s.MarkUsed(img.ID); err != nil {
		t.Fatal(err)
	}
	res, err := s.GC(ctx, time.Hour, nil)
	if err != nil || len(res.Images) != 0 {
		t.Fatalf("GC after MarkUsed removed %v (%v)", res, err)
	}
	got, err := s.ResolveImage(img.ID)
	if err != nil || time.Since(got.LastUsedAt) > time.Minute {
		t.Fatalf("LastUsedAt = %v, %v", got, err)
	}
	// a use within markUsedStep of the last one is not written again
	if err := s.MarkUsed(img.ID); err != nil {
		t.Fatal(err)
	}
	if again, err := s.ResolveImage(img.ID); err != nil || !again.LastUsedAt.Equal(got.LastUsedAt) {
		t.Errorf("LastUsedAt after a second MarkUsed = %v (was %v), %v", again.LastUsedAt, got.LastUsedAt, err)
	}
	if err := s.MarkUsed("sha256:" + strings.Repeat("0", 64)); !errors.Is(err, ErrImageNotFound) {
		t.Errorf("MarkUsed of a missing image: %v", err)
	}
}

// TestSweepUnreferenced: what an interrupted pull stored (a blob and a tree
// no image references) goes at once, images and their content stay, and
// nothing is swept while a fetch runs.
func TestSweepUnreferenced(t *testing.T) {
	reg := startRegistry(t)
	s := newStore(t)
	ctx := context.Background()
	ref := reg.push(t, "sweep/kept:1", testImage(t, "SWEEP=kept", []entry{{name: "f", body: "kept"}}))
	img, err := s.Pull(ctx, ref, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	orphanBlob := s.blobPath(strings.Repeat("ab", 32))
	orphanTree := filepath.Join(s.dir, treeDir, strings.Repeat("cd", 32))
	for _, p := range []string{orphanBlob, filepath.Join(orphanTree, "file")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("left by a killed pull"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fetching, err := s.holdFetchLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.SweepUnreferenced(ctx)
	if err != nil || !res.SweepDeferred || res.Blobs != 0 {
		t.Fatalf("sweep during a fetch: %+v, %v", res, err)
	}
	fetching.Close()
	if res, err = s.SweepUnreferenced(ctx); err != nil {
		t.Fatal(err)
	}
	if res.Blobs != 1 || res.Trees != 1 || len(res.Images) != 0 {
		t.Errorf("swept %+v, want the orphan blob and tree only", res)
	}
	for _, p := range []string{orphanBlob, orphanTree} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s survived the sweep", p)
		}
	}
	if _, err := s.LayerPaths(ctx, img); err != nil || !s.hasBlob(img.Layers[0].Digest) {
		t.Errorf("the image lost its content: %v", err)
	}
}

// TestMarkUsedFirstUse: an image pulled a moment ago records its first use
// at once (the once-a-minute step applies to later uses).
func TestMarkUsedFirstUse(t *testing.T) {
	reg := startRegistry(t)
	s := newStore(t)
	img, err := s.Fetch(context.Background(), reg.push(t, "mu/first:1", testImage(t, "MU=2", []entry{{name: "m", body: "m"}})), FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MarkUsed(img.ID); err != nil {
		t.Fatal(err)
	}
	got, err := s.ResolveImage(img.ID)
	if err != nil || !got.LastUsedAt.After(got.ImportedAt) {
		t.Errorf("first use not recorded: imported %v, last used %v (%v)", got.ImportedAt, got.LastUsedAt, err)
	}
}

// TestResolveImageForUse: the resolve reports a use to record for an image
// never used, and for one last used before markUsedStep, not after a use
// just recorded.
func TestResolveImageForUse(t *testing.T) {
	reg := startRegistry(t)
	s := newStore(t)
	ref := reg.push(t, "mu/use:1", testImage(t, "MU=3", []entry{{name: "m", body: "m"}}))
	img, err := s.Fetch(context.Background(), ref, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string, want bool) {
		t.Helper()
		got, mark, err := s.ResolveImageForUse(ref)
		if err != nil || got.ID != img.ID || mark != want {
			t.Errorf("%s: ResolveImageForUse = %v, mark %v, %v; want %s, mark %v", when, got, mark, err, img.ID, want)
		}
	}
	check("never used", true)
	if err := s.MarkUsed(img.ID); err != nil {
		t.Fatal(err)
	}
	check("just used", false)
	backdate(t, s, img.ID, time.Now().Add(-2*markUsedStep))
	check("used long ago", true)
	if _, _, err := s.ResolveImageForUse(strings.Replace(ref, "use", "none", 1)); !errors.Is(err, ErrImageNotFound) {
		t.Errorf("missing image: %v", err)
	}
}
