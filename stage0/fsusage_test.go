package stage0

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestDirUsage(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	u := dirUsage(context.Background(), dir)
	if u.Inodes != 3 || u.Bytes < 64<<10 || u.Statfs == nil || u.Device == dir {
		t.Fatalf("dirUsage = %+v; want 3 inodes, >= 64 KiB, statfs and a device", u)
	}
	if rel, err := filepath.Rel(u.Mountpoint, dir); err != nil || rel == ".." || filepath.IsAbs(rel) {
		t.Fatalf("mountpoint %q does not contain %q", u.Mountpoint, dir)
	}
	if missing := dirUsage(context.Background(), filepath.Join(dir, "nope")); missing.Bytes != 0 || missing.Statfs != nil {
		t.Fatalf("dirUsage of a missing dir = %+v", missing)
	}
}
