package confdir

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
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
