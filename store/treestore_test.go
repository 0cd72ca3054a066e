package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestLayerTreesStackAsOverlay(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for overlay whiteouts and mount")
	}
	reg := startRegistry(t)
	img := testImage(t, "OV=1",
		[]entry{{name: "keep", body: "k"}, {name: "gone", body: "g"}, {name: "dir/", typ: '5'}, {name: "dir/old", body: "o"}, {name: "lnk", typ: '2', linkname: "/keep"}},
		[]entry{{name: ".wh.gone"}, {name: "dir/", typ: '5'}, {name: "dir/.wh..wh..opq"}, {name: "dir/new", body: "n"}})
	ref := reg.push(t, "ov/img:1", img)
	s := newStore(t)
	ctx := context.Background()
	got, err := s.Fetch(ctx, ref, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	paths, err := s.LayerPaths(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range paths {
		if want := s.Dir() + "/tree/" + strings.TrimPrefix(got.Layers[i].ChainID, "sha256:"); p != want {
			t.Errorf("layer %d at %s, want %s", i, p, want)
		}
	}
	// Unpacked once: a second call returns the same trees.
	again, err := s.LayerPaths(ctx, got)
	if err != nil || strings.Join(again, ":") != strings.Join(paths, ":") {
		t.Fatalf("second LayerPaths = %v, %v", again, err)
	}
	merged := t.TempDir()
	// overlay wants the top layer first in lowerdir.
	opts := "lowerdir=" + paths[1] + ":" + paths[0]
	if err := unix.Mount("overlay", merged, "overlay", unix.MS_RDONLY, opts); err != nil {
		t.Skipf("overlayfs not available: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(merged, unix.MNT_DETACH) })
	mustFile(t, filepath.Join(merged, "keep"), "k")
	mustFile(t, filepath.Join(merged, "dir/new"), "n")
	for _, p := range []string{"gone", "dir/old"} {
		if _, err := os.Lstat(filepath.Join(merged, p)); !os.IsNotExist(err) {
			t.Errorf("%s visible in the overlay (err %v)", p, err)
		}
	}
	// The flat render shows the same tree.
	flat := filepath.Join(t.TempDir(), "flat")
	if err := s.RenderFlat(ctx, got, flat); err != nil {
		t.Fatal(err)
	}
	if a, b := listTree(t, merged), listTree(t, flat); a != b {
		t.Errorf("overlay view %q differs from flat render %q", a, b)
	}
	if err := s.RenderFlat(ctx, got, flat); err == nil {
		t.Error("RenderFlat into a non-empty directory succeeded")
	}
}

func listTree(t *testing.T, root string) string {
	var names []string
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && p != root {
			rel, _ := filepath.Rel(root, p)
			names = append(names, rel+":"+fi.Mode().Type().String())
		}
		return nil
	})
	return strings.Join(names, ",")
}

func TestCorruptLayerLeavesNothing(t *testing.T) {
	reg := startRegistry(t)
	img := testImage(t, "C=1", []entry{{name: "f", body: strings.Repeat("data", 4096)}})
	ref := reg.push(t, "bad/img:1", img)
	layers, _ := img.Layers()
	layerDigest := mustDigest(t, layers[0].Digest)
	ctx := context.Background()

	for _, tc := range []struct {
		name string
		hook func(d string, b []byte) []byte
	}{
		{"flipped byte", func(d string, b []byte) []byte {
			if d == layerDigest {
				b = append([]byte(nil), b...)
				b[len(b)/2] ^= 0xff
			}
			return b
		}},
		{"longer than declared", func(d string, b []byte) []byte {
			if d == layerDigest {
				return append(append([]byte(nil), b...), bytes.Repeat([]byte{0}, 1024)...)
			}
			return b
		}},
		{"truncated", func(d string, b []byte) []byte {
			if d == layerDigest {
				return b[:len(b)/2]
			}
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg.blobHook.Store(&tc.hook)
			defer reg.blobHook.Store(nil)
			s := newStore(t)
			if _, err := s.Fetch(ctx, ref, FetchOptions{}); err == nil {
				t.Fatal("fetch of a corrupt layer succeeded")
			} else {
				t.Logf("error: %v", err)
			}
			if s.hasBlob(layerDigest) {
				t.Error("corrupt layer blob stored")
			}
			if n := countDir(t, s.tmpPath()); n != 0 {
				t.Errorf("%d temporary files left", n)
			}
			if imgs, _ := s.ListImages(); len(imgs) != 0 {
				t.Errorf("image recorded: %v", imgs)
			}
		})
	}

	// A layer whose content does not match its diff ID, fetched with
	// Unpack: refused, and its (digest-valid) blob is not kept.
	bad := mutateDiffID(t, img)
	badRef := reg.push(t, "bad/diffid:1", bad)
	sd := newStore(t)
	if _, err := sd.Fetch(ctx, badRef, FetchOptions{Unpack: true}); err == nil || !strings.Contains(err.Error(), "diff ID") {
		t.Errorf("fetch with a diff ID mismatch: %v", err)
	}
	if sd.hasBlob(layerDigest) {
		t.Error("the refused layer blob is kept")
	}
	if n := countDir(t, sd.Dir()+"/tree"); n != 0 {
		t.Errorf("%d trees after a refused layer", n)
	}

	// A blob damaged on disk after the fetch: unpacking refuses it and
	// leaves no tree, and no temporary directory.
	s := newStore(t)
	got, err := s.Fetch(ctx, ref, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := s.blobPath(strings.TrimPrefix(layerDigest, "sha256:"))
	b, _ := os.ReadFile(p)
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LayerPaths(ctx, got); err == nil {
		t.Fatal("unpacking a damaged blob succeeded")
	} else {
		t.Logf("error: %v", err)
	}
	if n := countDir(t, s.Dir()+"/tree"); n != 0 {
		t.Errorf("%d trees visible after a failed unpack", n)
	}
	if n := countDir(t, s.tmpPath()); n != 0 {
		t.Errorf("%d temporary entries left after a failed unpack", n)
	}
}

func TestUsage(t *testing.T) {
	reg := startRegistry(t)
	ref := reg.push(t, "u/img:1", testImage(t, "U=1", []entry{{name: "big", body: strings.Repeat("u", 1<<20)}}))
	s := newStore(t)
	empty, err := s.Usage()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	img, err := s.Fetch(ctx, ref, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.LayerPaths(ctx, img); err != nil {
		t.Fatal(err)
	}
	u, err := s.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.Bytes < empty.Bytes+1<<20 || u.Inodes < empty.Inodes+5 {
		t.Errorf("usage %+v after a 1 MiB image, empty store %+v", u, empty)
	}
	if u.Mountpoint == "" || !strings.HasPrefix(s.Dir(), u.Mountpoint) {
		t.Errorf("mountpoint %q does not contain %q", u.Mountpoint, s.Dir())
	}
}

func TestFetchWithUnpack(t *testing.T) {
	reg := startRegistry(t)
	ref := reg.push(t, "unpack/img:1", testImage(t, "UP=1", []entry{{name: "one", body: "1"}}, []entry{{name: "two", body: "2"}}))
	s := newStore(t)
	got, err := s.Fetch(context.Background(), ref, FetchOptions{Unpack: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"one", "two"} {
		p, err := s.TreePath(got.Layers[i])
		if err != nil {
			t.Fatal(err)
		}
		mustFile(t, filepath.Join(p, name), string(rune('1'+i)))
	}
}

func TestMountedTreesSurviveRemovalAndGC(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	reg := startRegistry(t)
	ref := reg.push(t, "mnt/img:1", testImage(t, "MNT=1", []entry{{name: "a", body: "a"}}, []entry{{name: "b", body: "b"}}))
	s := newStore(t)
	ctx := context.Background()
	img, err := s.Fetch(ctx, ref, FetchOptions{Unpack: true})
	if err != nil {
		t.Fatal(err)
	}
	paths, err := s.LayerPaths(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	merged := t.TempDir()
	if err := unix.Mount("overlay", merged, "overlay", unix.MS_RDONLY, "lowerdir="+paths[1]+":"+paths[0]); err != nil {
		t.Skipf("overlayfs not available: %v", err)
	}
	mounted := true
	t.Cleanup(func() {
		if mounted {
			unix.Unmount(merged, unix.MNT_DETACH)
		}
	})
	if _, err := s.RemoveImage(img.ID, RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("mounted tree %s removed: %v", p, err)
		}
	}
	mustFile(t, filepath.Join(merged, "b"), "b")
	if err := unix.Unmount(merged, 0); err != nil {
		t.Fatal(err)
	}
	mounted = false
	res, err := s.GC(ctx, 0, nil)
	if err != nil || res.Trees != 2 {
		t.Errorf("GC after unmount: %+v, %v; want the 2 trees removed", res, err)
	}
}
