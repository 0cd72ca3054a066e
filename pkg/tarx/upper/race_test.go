package upper

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// archiveSwapped archives an upper directory holding d/f and f ("public")
// while swap runs just before the content of the file rel is opened, as a
// container writing into the layer would. Outside the directory, out/f and
// out/d/f hold "secret". It returns the contents the archive holds, by
// name, and Archive's error.
func archiveSwapped(t *testing.T, rel string, swap func(up, out string)) (map[string]string, error) {
	t.Helper()
	up, out := t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(up, "d"), filepath.Join(out, "d")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, data := range map[string]string{
		filepath.Join(up, "f"): "public", filepath.Join(up, "d", "f"): "public", filepath.Join(up, "g"): "others",
		filepath.Join(out, "f"): "secret", filepath.Join(out, "d", "f"): "secret",
	} {
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	beforeOpen = func(r string) {
		if r == rel {
			swap(up, out)
		}
	}
	t.Cleanup(func() { beforeOpen = nil })
	var buf bytes.Buffer
	err := Archive(&buf, up)
	got := map[string]string{}
	tr := tar.NewReader(&buf)
	for {
		h, rerr := tr.Next()
		if rerr != nil {
			break
		}
		b, _ := io.ReadAll(tr)
		got[h.Name] = string(b)
	}
	return got, err
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestArchiveDirSwappedForSymlink: a directory replaced by a symlink to
// outside the layer after the walk entered it: the file is read from the
// directory the walk opened, not through the symlink.
func TestArchiveDirSwappedForSymlink(t *testing.T) {
	got, err := archiveSwapped(t, "d/f", func(up, out string) {
		must(t, os.Rename(filepath.Join(up, "d"), filepath.Join(up, "d.old")))
		must(t, os.Symlink(filepath.Join(out, "d"), filepath.Join(up, "d")))
	})
	if err != nil {
		t.Fatalf("Archive: %v", err)
	}
	if got["d/f"] != "public" {
		t.Errorf("d/f archived as %q, want what the layer held", got["d/f"])
	}
}

// TestArchiveFileSwappedForSymlink: a file replaced by a symlink to
// outside the layer between its stat and its read fails the archive.
func TestArchiveFileSwappedForSymlink(t *testing.T) {
	got, err := archiveSwapped(t, "f", func(up, out string) {
		must(t, os.Remove(filepath.Join(up, "f")))
		must(t, os.Symlink(filepath.Join(out, "f"), filepath.Join(up, "f")))
	})
	if !errors.Is(err, ErrChanged) {
		t.Errorf("Archive: %v, want ErrChanged", err)
	}
	for name, data := range got {
		if data == "secret" {
			t.Errorf("%s archived with the content of a file outside the layer", name)
		}
	}
}

// TestArchiveFileSwappedForAnother: a file replaced by another between its
// stat and its read fails the archive (its header already holds the first
// one's size and mode).
func TestArchiveFileSwappedForAnother(t *testing.T) {
	_, err := archiveSwapped(t, "f", func(up, _ string) {
		must(t, os.Rename(filepath.Join(up, "g"), filepath.Join(up, "f")))
	})
	if !errors.Is(err, ErrChanged) {
		t.Errorf("Archive: %v, want ErrChanged", err)
	}
}

// TestArchiveTooDeep: a tree deeper than MaxDepth is refused, not walked
// with a descriptor per level; one MaxDepth deep is archived.
func TestArchiveTooDeep(t *testing.T) {
	for _, c := range []struct {
		depth int
		want  error
	}{{MaxDepth, nil}, {MaxDepth + 1, ErrTooDeep}} {
		up := t.TempDir()
		fd, err := unix.Open(up, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		must(t, err)
		for i := 0; i < c.depth; i++ { // each relative to the last: no path limit
			must(t, unix.Mkdirat(fd, "d", 0o755))
			next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			unix.Close(fd)
			must(t, err)
			fd = next
		}
		unix.Close(fd)
		if err := Archive(io.Discard, up); !errors.Is(err, c.want) {
			t.Errorf("depth %d: Archive: %v, want %v", c.depth, err, c.want)
		}
	}
}

// TestArchiveAttrName: an attribute whose name holds "=" (which Linux
// takes and a PAX record cannot) fails the archive with ErrAttrName, not
// with the tar writer's error.
func TestArchiveAttrName(t *testing.T) {
	up := t.TempDir()
	f := filepath.Join(up, "f")
	must(t, os.WriteFile(f, []byte("x"), 0o644))
	if err := unix.Setxattr(f, "user.a=b", []byte("v"), 0); err != nil {
		t.Skipf("no user attributes here: %v", err)
	}
	if err := Archive(io.Discard, up); !errors.Is(err, ErrAttrName) {
		t.Errorf("Archive: %v, want ErrAttrName", err)
	}
}
