package upper_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/tarx"
	"github.com/rkt/rkt/pkg/tarx/upper"
)

// TestArchiveRoundTrip: an upper directory archived and
// extracted with WhiteoutOverlay comes back with its files, links,
// whiteouts and opaque directories.
func TestArchiveRoundTrip(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("whiteouts and trusted.* attributes need root")
	}
	up := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(up, "a"), []byte("data"), 0o640))
	must(os.Link(filepath.Join(up, "a"), filepath.Join(up, "a-link")))
	must(os.Symlink("a", filepath.Join(up, "sym")))
	must(os.Mkdir(filepath.Join(up, "opq"), 0o700))
	must(unix.Setxattr(filepath.Join(up, "opq"), upper.OpaqueXattr, []byte("y"), 0))
	must(os.WriteFile(filepath.Join(up, "opq", "kept"), []byte("k"), 0o600))
	must(unix.Setxattr(filepath.Join(up, "a"), "user.note", []byte("v"), 0))
	must(unix.Mknod(filepath.Join(up, "gone"), unix.S_IFCHR, 0))
	var buf bytes.Buffer
	must(upper.Archive(&buf, up))
	out := t.TempDir()
	must(tarx.Extract(&buf, out, tarx.Options{Whiteouts: tarx.WhiteoutOverlay}))

	if b, err := os.ReadFile(filepath.Join(out, "a")); err != nil || string(b) != "data" {
		t.Errorf("a: %q, %v", b, err)
	}
	var sa, sl unix.Stat_t
	must(unix.Lstat(filepath.Join(out, "a"), &sa))
	must(unix.Lstat(filepath.Join(out, "a-link"), &sl))
	if sa.Ino != sl.Ino || sa.Mode&0o777 != 0o640 {
		t.Errorf("a-link is not a hardlink of a (inodes %d, %d), or a's mode is %o", sa.Ino, sl.Ino, sa.Mode&0o777)
	}
	if l, err := os.Readlink(filepath.Join(out, "sym")); err != nil || l != "a" {
		t.Errorf("sym: %q, %v", l, err)
	}
	val := make([]byte, 8)
	if n, err := unix.Getxattr(filepath.Join(out, "opq"), upper.OpaqueXattr, val); err != nil || string(val[:n]) != "y" {
		t.Errorf("opq is not opaque: %q, %v", val[:n], err)
	}
	if n, err := unix.Getxattr(filepath.Join(out, "a"), "user.note", val); err != nil || string(val[:n]) != "v" {
		t.Errorf("a lost its attribute: %q, %v", val[:n], err)
	}
	if _, err := os.Stat(filepath.Join(out, "opq", "kept")); err != nil {
		t.Errorf("opq/kept: %v", err)
	}
	var sg unix.Stat_t
	if err := unix.Lstat(filepath.Join(out, "gone"), &sg); err != nil || sg.Mode&unix.S_IFMT != unix.S_IFCHR || sg.Rdev != 0 {
		t.Errorf("gone is not a whiteout: mode %o rdev %d, %v", sg.Mode, sg.Rdev, err)
	}
}
