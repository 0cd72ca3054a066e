package fileperm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func stat(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestClasses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("sets owners: needs root")
	}
	old := unix.Umask(0o077) // a umask must not change what a class gives
	defer unix.Umask(old)
	dir := t.TempDir()
	for _, c := range []struct {
		class      Class
		dir, file  uint32
		gidIsGroup bool
	}{
		{Shared, 0o750, 0o640, true},
		{Private, 0o700, 0o600, false},
		{Traversable, 0o751, 0o640, true},
		{Public, 0o755, 0o644, false},
	} {
		d := filepath.Join(dir, "d", "x", c.class.String())
		if err := MkdirAll(d, c.class); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(d, "f")
		if err := WriteFile(f, []byte("data"), c.class); err != nil {
			t.Fatal(err)
		}
		wantGID := uint32(0)
		if c.gidIsGroup {
			wantGID = uint32(GID())
		}
		for _, x := range []struct {
			path string
			mode uint32
		}{{d, c.dir}, {f, c.file}} {
			st := stat(t, x.path)
			if st.Mode&0o7777 != x.mode || st.Uid != 0 || st.Gid != wantGID {
				t.Errorf("%s: %#o %d:%d, want %#o 0:%d", x.path, st.Mode&0o7777, st.Uid, st.Gid, x.mode, wantGID)
			}
		}
		// Apply corrects what someone else changed.
		os.Chmod(d, 0o777)
		if err := Apply(d, c.class); err != nil {
			t.Fatal(err)
		}
		if st := stat(t, d); st.Mode&0o7777 != c.dir {
			t.Errorf("Apply left %s %#o", d, st.Mode&0o7777)
		}
	}
}

func TestWriteFileReplacesAtomically(t *testing.T) {
	for name, write := range map[string]func(string, []byte, Class) error{
		"WriteFile": WriteFile, "WriteFileVolatile": WriteFileVolatile,
	} {
		dir := t.TempDir()
		p := filepath.Join(dir, "state")
		for _, s := range []string{"one", "two"} {
			if err := write(p, []byte(s), Private); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(p); string(b) != s {
				t.Fatalf("%s: got %q want %q", name, b, s)
			}
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != Private.FileMode().Perm() {
				t.Fatalf("%s: mode %v (%v), want %v", name, fi.Mode(), err, Private.FileMode())
			}
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("%s: temporary files left: %v", name, entries)
		}
	}
}

func TestStage(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state")
	if err := WriteFile(p, []byte("old"), Shared); err != nil {
		t.Fatal(err)
	}
	s, err := Stage(p, []byte("new"), Private)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("staged content visible before Install: %q", b)
	}
	if err := s.Install(); err != nil {
		t.Fatal(err)
	}
	s.Discard() // no-op once installed
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatalf("got %q after Install, want %q", b, "new")
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != Private.FileMode().Perm() {
		t.Fatalf("mode %v (%v), want %v", fi.Mode(), err, Private.FileMode())
	}
	d, err := Stage(p, []byte("dropped"), Private)
	if err != nil {
		t.Fatal(err)
	}
	d.Discard()
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatalf("got %q after Discard, want %q", b, "new")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

func TestSyncFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := WriteFileVolatile(p, []byte("x"), Private); err != nil {
		t.Fatal(err)
	}
	if err := SyncFile(p); err != nil {
		t.Errorf("SyncFile: %v", err)
	}
	if err := SyncFile(p + ".missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("SyncFile of a missing file: %v", err)
	}
}

func TestAllowSearch(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	d := filepath.Join(t.TempDir(), "pod")
	if err := Mkdir(d, Private); err != nil {
		t.Fatal(err)
	}
	if err := AllowSearch(d, 123456); err != nil {
		if err == unix.EOPNOTSUPP {
			t.Skip("no POSIX ACLs on this filesystem")
		}
		t.Fatal(err)
	}
	// mode bits keep owner rwx, others nothing; the group class shows the mask
	if st := stat(t, d); st.Mode&0o707 != 0o700 {
		t.Errorf("mode %#o after the ACL", st.Mode&0o7777)
	}
	buf := make([]byte, 256)
	n, err := unix.Getxattr(d, aclXattr, buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != 4+5*8 {
		t.Errorf("ACL of %d bytes, want 5 entries", n)
	}
}
