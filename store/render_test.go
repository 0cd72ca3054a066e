package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestRenderFlatFailureLeavesNothing: a render that fails half-way (here
// a layer blob is missing; an interrupted `rkt image render` the same)
// leaves no partial root filesystem in the destination, which looked
// rendered and made the next render fail with "directory not empty".
func TestRenderFlatFailureLeavesNothing(t *testing.T) {
	reg := startRegistry(t)
	img := testImage(t, "R=1", []entry{{name: "first", body: "layer 1"}}, []entry{{name: "second", body: "layer 2"}})
	ref := reg.push(t, "render/img:1", img)
	ctx := context.Background()
	s := newStore(t)
	got, err := s.Fetch(ctx, ref, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := digestHex(got.Layers[1].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(s.blobPath(h)); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dest := filepath.Join(parent, "rootfs")
	if err := s.RenderFlat(ctx, got, dest); err == nil {
		t.Fatal("render without a layer's blob succeeded")
	}
	if _, err := os.Lstat(dest); !errors.Is(err, fs.ErrNotExist) {
		e, _ := os.ReadDir(dest)
		t.Errorf("a failed render into a new directory left it: %v, %d entries", err, len(e))
	}
	// into an existing empty directory: it stays, empty
	if err := os.Mkdir(dest, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.RenderFlat(ctx, got, dest); err == nil {
		t.Fatal("render without a layer's blob succeeded")
	}
	if e, err := os.ReadDir(dest); err != nil || len(e) != 0 {
		t.Errorf("a failed render into an empty directory left %d entries (%v)", len(e), err)
	}
}
