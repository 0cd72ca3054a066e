package upper_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/tarx"
	"github.com/rkt/rkt/pkg/tarx/upper"
)

// buildUpper makes, in the empty directory up, the tree the ops describe
// (a container's writable layer is what its processes make it): each op is
// a kind byte, a parent byte (an index into the directories made so far),
// a length byte and that many bytes of name, then for files, links and
// attributes a length byte and that many bytes of content, target or
// value. Whiteouts and opaque directories need root.
func buildUpper(up string, ops []byte) {
	dirs := []string{up}
	var files, all []string
	take := func() []byte {
		if len(ops) == 0 {
			return nil
		}
		n := min(int(ops[0]), len(ops)-1)
		b := ops[1 : 1+n]
		ops = ops[1+n:]
		return b
	}
	root := os.Geteuid() == 0
	for len(ops) >= 2 {
		kind, parent := ops[0]%7, dirs[int(ops[1])%len(dirs)]
		ops = ops[2:]
		name := strings.Map(func(r rune) rune {
			if r == '/' || r == 0 {
				return '_'
			}
			return r
		}, string(take()))
		// a name an OCI layer reserves for whiteouts comes back as one
		// (see Archive)
		if name == "" || name == "." || name == ".." || len(name) > 255 || strings.HasPrefix(name, upper.WhiteoutPrefix) {
			continue
		}
		p := filepath.Join(parent, name)
		var err error
		switch kind {
		case 0:
			err = os.Mkdir(p, 0o755)
			if err == nil {
				dirs = append(dirs, p)
			}
		case 1:
			err = os.WriteFile(p, take(), 0o640)
			if err == nil {
				files = append(files, p)
			}
		case 2:
			target := strings.ReplaceAll(string(take()), "\x00", "_")
			if target == "" {
				continue
			}
			err = os.Symlink(target, p)
		case 3:
			if len(files) == 0 {
				continue
			}
			err = os.Link(files[len(name)%len(files)], p)
		case 4:
			if len(all) == 0 {
				continue
			}
			val := take()
			if !strings.Contains(name, "=") { // refused: TestArchiveAttrName
				unix.Lsetxattr(all[len(name)%len(all)], "user."+name, val, 0) // symlinks take none
			}
			continue
		case 5:
			if !root {
				continue
			}
			err = unix.Mknod(p, unix.S_IFCHR, 0)
		case 6:
			if !root {
				continue
			}
			if err = os.Mkdir(p, 0o700); err == nil {
				dirs = append(dirs, p)
				err = unix.Setxattr(p, upper.OpaqueXattr, []byte("y"), 0)
			}
		}
		if err == nil {
			all = append(all, p)
		}
	}
}

// entry is what a round trip must keep of a file.
type entry struct {
	mode    uint32
	content string // a regular file's, or a symlink's target
	xattrs  string // sorted name=value lines, overlay's own included
	inode   string // the first name of its hardlinked inode
}

// treeOf describes the tree at dir by path below it.
func treeOf(t *testing.T, dir string) map[string]entry {
	out := map[string]entry{}
	firstName := map[uint64]string{}
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		e := entry{mode: st.Mode}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.content = string(b)
			if first, ok := firstName[st.Ino]; ok {
				e.inode = first
			} else {
				firstName[st.Ino] = rel
				e.inode = rel
			}
		case unix.S_IFLNK:
			e.content, _ = os.Readlink(p)
		case unix.S_IFCHR:
			if st.Rdev == 0 { // a whiteout: its type is all a layer keeps
				e.mode = unix.S_IFCHR
			}
		}
		var lines []string
		buf := make([]byte, 64<<10)
		if n, err := unix.Llistxattr(p, buf); err == nil {
			for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
				if name == "" {
					continue
				}
				val := make([]byte, 64<<10)
				vn, _ := unix.Lgetxattr(p, name, val)
				lines = append(lines, name+"="+string(val[:max(vn, 0)]))
			}
		}
		slices.Sort(lines)
		e.xattrs = strings.Join(lines, "\n")
		out[rel] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzArchive archives a writable layer made by arbitrary operations and
// extracts it as a layer (WhiteoutOverlay): Archive must not fail on what
// a container can make, and the extracted tree must be the same files,
// types, modes, contents, link targets, hardlinks, attributes, whiteouts
// and opaque directories.
func FuzzArchive(f *testing.F) {
	op := func(kind, parent byte, name string, extra ...string) []byte {
		b := append([]byte{kind, parent, byte(len(name))}, name...)
		for _, e := range extra {
			b = append(append(b, byte(len(e))), e...)
		}
		return b
	}
	f.Add(slices.Concat(op(0, 0, "d"), op(1, 1, "f", "data"), op(3, 0, "h"), op(2, 1, "s", "/etc/shadow")))
	f.Add(slices.Concat(op(6, 0, "opq"), op(1, 1, "kept", "k"), op(5, 0, "gone"), op(4, 0, "x", "v")))
	f.Add(slices.Concat(op(1, 0, "a\nb", ""), op(2, 0, "up", "../../.."), op(0, 0, strings.Repeat("n", 200)),
		op(1, 1, "x", "z"), op(4, 0, "k", "\x00\xff")))
	f.Fuzz(func(t *testing.T, ops []byte) {
		up, out := filepath.Join(t.TempDir(), "up"), t.TempDir()
		if err := os.Mkdir(up, 0o755); err != nil {
			t.Fatal(err)
		}
		buildUpper(up, ops)
		var buf bytes.Buffer
		if err := upper.Archive(&buf, up); err != nil {
			t.Fatalf("Archive: %v", err)
		}
		if err := tarx.Extract(&buf, out, tarx.Options{Whiteouts: tarx.WhiteoutOverlay}); err != nil {
			t.Fatalf("Extract of the archive: %v", err)
		}
		want, got := treeOf(t, up), treeOf(t, out)
		for p, w := range want {
			if g, ok := got[p]; !ok {
				t.Errorf("%q lost", p)
			} else if g != w {
				t.Errorf("%q: got %+v, want %+v", p, g, w)
			}
		}
		for p := range got {
			if _, ok := want[p]; !ok {
				t.Errorf("%q added", p)
			}
		}
	})
}
