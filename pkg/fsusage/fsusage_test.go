package fsusage

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// du is what du(1) counts under root: allocated bytes and inodes, each
// hard-linked file once.
func du(t *testing.T, root string) Usage {
	t.Helper()
	var u Usage
	for _, c := range []struct {
		flag string
		n    *uint64
	}{{"-B1", &u.Bytes}, {"--inodes", &u.Inodes}} {
		out, err := exec.Command("du", "-s", c.flag, root).Output()
		if err != nil {
			t.Fatalf("du %s %s: %v", c.flag, root, err)
		}
		if *c.n, err = strconv.ParseUint(strings.Fields(string(out))[0], 10, 64); err != nil {
			t.Fatalf("du %s %s: %q", c.flag, root, out)
		}
	}
	return u
}

func TestTree(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/b/c", "a/d", "e"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range []string{"a/x", "a/b/c/y", "e/z", "top"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte(strings.Repeat("x", 5000*i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"a/d/link1", "e/link2"} { // two more links to a/b/c/y: counted once
		if err := os.Link(filepath.Join(root, "a/b/c/y"), filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/", filepath.Join(root, "a/root")); err != nil { // not followed
		t.Fatal(err)
	}
	got, err := Tree(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if want := du(t, root); got != want || got.Inodes != 11 {
		t.Errorf("Tree = %+v, want %+v (11 inodes)", got, want)
	}
	file, err := Tree(context.Background(), filepath.Join(root, "top"))
	if err != nil || file.Inodes != 1 || file.Bytes == 0 {
		t.Errorf("Tree of a file = %+v, %v", file, err)
	}
	if _, err := Tree(context.Background(), filepath.Join(root, "none")); err == nil {
		t.Error("Tree of a missing path succeeded")
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// TestTreeWideDirectory: a directory of many entries (a container can make
// a million in its writable layer) is read in batches, so what the walk
// holds does not grow with it; reading it whole (filepath.WalkDir) holds
// every entry at once and allocates ~420 bytes an entry (84 MB for
// 200,000). What the batches allocate is mostly the names, a tenth.
func TestTreeWideDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 20,000 files")
	}
	root := t.TempDir()
	const n = 20000
	for i := 0; i < n; i++ {
		f, err := os.Create(filepath.Join(root, strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	var u Usage
	var err error
	alloc := allocated(func() { u, err = Tree(context.Background(), root) })
	if err != nil || u.Inodes != n+1 {
		t.Fatalf("Tree = %+v, %v; want %d inodes", u, err, n+1)
	}
	whole := allocated(func() {
		filepath.WalkDir(root, func(_ string, d fs.DirEntry, _ error) error {
			d.Info()
			return nil
		})
	})
	t.Logf("%d entries: %d bytes allocated (whole reads: %d)", n, alloc, whole)
	if alloc*5 > whole {
		t.Errorf("the walk of %d entries allocated %d bytes, whole reads %d: want under a fifth", n, alloc, whole)
	}
}

// TestTreeDeep: a tree deeper than a path can name is measured down to
// MaxDepth; what lies deeper is not (the walk holds a descriptor a level).
func TestTreeDeep(t *testing.T) {
	root := t.TempDir()
	name := strings.Repeat("d", 100)
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < MaxDepth+10; i++ { // ~100 KB of path
		if err := unix.Mkdirat(fd, name, 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	unix.Close(fd)
	defer os.RemoveAll(root)
	u, err := Tree(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(1 + MaxDepth); u.Inodes != want {
		t.Errorf("Tree counted %d inodes, want %d (the root and %d levels)", u.Inodes, want, MaxDepth)
	}
}

// TestTreeCancelled: a walk stops between batches once its context is
// cancelled (a service shutting down while it measures a container's
// layer of millions of files), with the context's error.
func TestTreeCancelled(t *testing.T) {
	root := t.TempDir()
	for i := range 3 * batch {
		if err := os.Mkdir(filepath.Join(root, strconv.Itoa(i)), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	u, err := Tree(ctx, root)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Tree with a cancelled context: %v; want context.Canceled", err)
	}
	if u.Inodes != 1 {
		t.Errorf("a cancelled walk counted %d inodes; want the root's only", u.Inodes)
	}
	if u, err := Tree(context.Background(), root); err != nil || u.Inodes != 1+3*batch {
		t.Errorf("Tree = %d inodes, %v; want %d", u.Inodes, err, 1+3*batch)
	}
}

func TestMountpoint(t *testing.T) {
	for p, want := range map[string]string{"/": "/", "/proc/self/fd": "/proc", "/proc": "/proc"} {
		if got, err := Mountpoint(p); err != nil || got != want {
			t.Errorf("Mountpoint(%q) = %q, %v; want %q", p, got, err, want)
		}
	}
	if _, err := Mountpoint("/nonexistent/x"); err == nil {
		t.Error("Mountpoint of a missing path succeeded")
	}
}
