package confdir

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
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
