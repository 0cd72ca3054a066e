package confdir

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestJSONFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.json", "a.json", "c.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "d.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	got, err := JSONFiles(dir)
	want := []string{filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("JSONFiles = %v, %v; want %v", got, err, want)
	}
	if got, err := JSONFiles(filepath.Join(dir, "missing")); err != nil || got != nil {
		t.Errorf("missing dir: %v, %v", got, err)
	}
	if _, err := JSONFiles(filepath.Join(dir, "a.json")); err == nil {
		t.Error("a file as a directory: no error")
	}
}

// TestReadFileRefusesNonFiles: a FIFO, a device or an endless file where a
// config file should be is refused at once (a FIFO would block every
// reader, /dev/zero would be read until memory runs out).
func TestReadFileRefusesNonFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, MaxFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(ok, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]error{fifo: ErrNotRegular, zero: ErrNotRegular, big: ErrTooLarge, ok: nil} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(p); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, want) {
				t.Errorf("%s: %v, want %v", filepath.Base(p), err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadFile blocks", filepath.Base(p))
		}
	}
}

// TestWritableByOthers: a configuration directory, sub-directory or file
// that a user other than root may change is named.
func TestWritableByOthers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files other owners")
	}
	dir := filepath.Join(t.TempDir(), "rkt")
	for _, d := range []string{"paths.d", "net.d", "trustedkeys/prefix.d"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"paths.d/p.json", "net.d/n.conf", "trustedkeys/prefix.d/k"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := WritableByOthers(dir); len(got) != 0 {
		t.Fatalf("root's 0755/0644: %q", got)
	}
	// rkt 1.x's /etc/rkt: 2775 root:rkt-admin; a file an admin made.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chown(dir, 0, 65534))
	must(os.Chmod(dir, 0o2775))
	must(os.Chown(filepath.Join(dir, "paths.d/p.json"), 65534, 0))
	must(os.Chmod(filepath.Join(dir, "net.d"), 0o757))
	must(os.Chown(filepath.Join(dir, "trustedkeys/prefix.d/k"), 65534, 0)) // deeper: not read as config
	got := WritableByOthers(dir)
	want := []string{dir + " is writable by group", filepath.Join(dir, "net.d") + " is writable by every user", filepath.Join(dir, "paths.d/p.json") + " is owned by uid 65534"}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %d notices", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("notice %d = %q, want %q...", i, got[i], want[i])
		}
	}
	// a root-owned directory writable by root's group only is fine
	must(os.Chown(dir, 0, 0))
	if got := WritableByOthers(dir); len(got) != 2 {
		t.Errorf("group root may write: %q", got)
	}
}
