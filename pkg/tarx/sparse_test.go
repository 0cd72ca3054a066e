package tarx

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/rkt/rkt/tests/testutil"
)

// TestSparseRefused: a sparse entry, which a few bytes of archive can make
// terabytes long, is refused before anything is written.
func TestSparseRefused(t *testing.T) {
	for name, b := range testutil.SparseTars("big", 256<<20) {
		dir := t.TempDir()
		err := Extract(bytes.NewReader(b), dir, Options{})
		if !errors.Is(err, ErrSparse) {
			t.Errorf("%s sparse tar (%d bytes): %v, want ErrSparse", name, len(b), err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s sparse tar wrote %d entries", name, len(entries))
		}
	}
}
