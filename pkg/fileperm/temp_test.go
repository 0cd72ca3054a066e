package fileperm

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestIsTemp(t *testing.T) {
	for name, want := range map[string]bool{
		".pod.tmp2840184913":       true,
		".net-info.json.tmp1":      true,
		".a.tmp1.tmp22":            true,
		"pod.tmp1":                 false, // no leading dot
		".pod.tmp":                 false, // no random part
		".pod.tmp12x":              false,
		".tmp1":                    false, // no target name
		".pod.tmp1.json":           false,
		".stage1.sock-12345":       false,
		".new-aaaaaaaa-0000-4000-": false,
	} {
		if got := IsTemp(name); got != want {
			t.Errorf("IsTemp(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestRemoveStaleTempTakesOnlyAbandonedWrites: what a writer killed
// between writing its temporary file and renaming it left (a Stage never
// installed) is removed once StaleTempAge old; a recent temporary file,
// the target, other old files and non-regular entries with such a name
// stay, and the directory keeps its modification time.
func TestRemoveStaleTempTakesOnlyAbandonedWrites(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "state")
	if err := WriteFile(target, []byte("old"), Private); err != nil {
		t.Fatal(err)
	}
	killed, err := Stage(target, []byte("new"), Private) // never installed
	if err != nil {
		t.Fatal(err)
	}
	writing, err := CreateTemp(target)
	if err != nil {
		t.Fatal(err)
	}
	writing.Close()
	if !IsTemp(filepath.Base(writing.Name())) {
		t.Fatalf("CreateTemp's %q is not IsTemp", writing.Name())
	}
	if !IsTemp(filepath.Base(killed.tmp)) {
		t.Fatalf("Stage's %q is not IsTemp", killed.tmp)
	}
	tempDir := filepath.Join(dir, ".state.tmp1")
	tempLink := filepath.Join(dir, ".state.tmp2")
	other := filepath.Join(dir, ".other")
	if err := os.Mkdir(tempDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, tempLink); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-StaleTempAge - time.Minute)
	for _, p := range []string{target, killed.tmp, tempDir, other, dir} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	ts := []unix.Timespec{unix.NsecToTimespec(old.UnixNano()), unix.NsecToTimespec(old.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, tempLink, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatal(err)
	}
	if err := RemoveStaleTemp(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(killed.tmp); err == nil {
		t.Errorf("abandoned temporary file %s kept", killed.tmp)
	}
	for _, p := range []string{target, writing.Name(), tempDir, tempLink, other} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	if fi, err := os.Stat(dir); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("directory dated %v (%v), was %v", fi.ModTime(), err, old)
	}
	if err := RemoveStaleTemp(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("missing directory: %v", err)
	}
}
