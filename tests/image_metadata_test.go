package tests

import (
	"archive/tar"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/tests/testutil"
)

// TestFetchPreservesMetadata unpacks a layer with owners, modes (setuid,
// sticky), times, xattrs, a device node, hard and symbolic links, and
// checks them in the tree store (what pods mount) and in a render.
func TestFetchPreservesMetadata(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	mtime := time.Date(2011, 2, 3, 4, 5, 6, 0, time.UTC)
	meta := testutil.Layer(t,
		testutil.Dir("m"),
		testutil.Entry{Name: "m/owned", Body: []byte("o"), UID: 1000, GID: 1001, Mode: 0o640, ModTime: mtime},
		testutil.Entry{Name: "m/suid", Body: []byte("s"), Mode: 0o4755},
		testutil.Entry{Name: "m/sticky", Type: tar.TypeDir, Mode: 0o1777},
		testutil.Entry{Name: "m/xattr", Body: []byte("x"), Xattrs: map[string]string{"user.rkt.test": "hello"}},
		testutil.Entry{Name: "m/null", Type: tar.TypeChar, Mode: 0o666, Devmajor: 1, Devminor: 3},
		testutil.Hardlink("m/hard", "m/owned"),
		testutil.Symlink("m/sym", "owned"),
	)
	img := testutil.BusyboxWith(t, testutil.ImageConfig{}, meta)
	id := env.Fetch(reg.Push(t, "meta:1", img))

	// The tree of the top layer is the one holding m/.
	var tree string
	for _, d := range dirEntries(t, casDir(env.DataDir, "tree")) {
		if _, err := os.Lstat(casDir(env.DataDir, "tree", d, "m")); err == nil {
			tree = casDir(env.DataDir, "tree", d)
		}
	}
	if tree == "" {
		t.Fatalf("no tree holds the layer")
	}
	render := filepath.Join(env.Root, "render")
	env.RunOK("image", "render", id, render)

	for _, root := range []string{tree, render} {
		check := func(name string, f func(fi os.FileInfo, st *syscall.Stat_t)) {
			fi, err := os.Lstat(filepath.Join(root, name))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			f(fi, fi.Sys().(*syscall.Stat_t))
		}
		check("m/owned", func(fi os.FileInfo, st *syscall.Stat_t) {
			if st.Uid != 1000 || st.Gid != 1001 || fi.Mode().Perm() != 0o640 {
				t.Errorf("%s m/owned: uid %d gid %d mode %v", root, st.Uid, st.Gid, fi.Mode())
			}
			if !fi.ModTime().Equal(mtime) {
				t.Errorf("%s m/owned: mtime %v, want %v", root, fi.ModTime(), mtime)
			}
			if st.Nlink != 2 {
				t.Errorf("%s m/owned: nlink %d, want 2 (hard link kept)", root, st.Nlink)
			}
		})
		check("m/suid", func(fi os.FileInfo, st *syscall.Stat_t) {
			if fi.Mode()&os.ModeSetuid == 0 {
				t.Errorf("%s m/suid lost setuid: %v", root, fi.Mode())
			}
		})
		check("m/sticky", func(fi os.FileInfo, st *syscall.Stat_t) {
			if fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
				t.Errorf("%s m/sticky: %v", root, fi.Mode())
			}
		})
		check("m/null", func(fi os.FileInfo, st *syscall.Stat_t) {
			if fi.Mode()&os.ModeCharDevice == 0 || unix.Major(uint64(st.Rdev)) != 1 || unix.Minor(uint64(st.Rdev)) != 3 {
				t.Errorf("%s m/null: mode %v rdev %d", root, fi.Mode(), st.Rdev)
			}
		})
		check("m/sym", func(fi os.FileInfo, st *syscall.Stat_t) {
			if l, _ := os.Readlink(filepath.Join(root, "m/sym")); l != "owned" {
				t.Errorf("%s m/sym -> %q", root, l)
			}
		})
		buf := make([]byte, 64)
		if n, err := unix.Lgetxattr(filepath.Join(root, "m/xattr"), "user.rkt.test", buf); err != nil || string(buf[:n]) != "hello" {
			t.Errorf("%s m/xattr: xattr %q %v", root, buf[:max(n, 0)], err)
		}
	}
}
