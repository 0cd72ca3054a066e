package tests

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// assertFile fails unless path is a regular file holding content.
func assertFile(t *testing.T, path, content string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if string(b) != content {
		t.Errorf("%s holds %q, want %q", path, b, content)
	}
}

// assertMissing fails if path exists.
func assertMissing(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s should not exist (err %v)", path, err)
	}
}

// dirEntries lists the names in dir (none if it does not exist).
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("cannot list %s: %v", dir, err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// casDir is the store directory of a data dir.
func casDir(dataDir string, sub ...string) string {
	return filepath.Join(append([]string{dataDir, "cas"}, sub...)...)
}
