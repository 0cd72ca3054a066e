package store

import (
	"os"
	"strings"
	"testing"
)

// TestOpenTruncatedDB: a store.db that lost its tail (a power cut on a
// filesystem without ordered data, a partial copy) while its meta pages
// survived points at pages past its end. Opening it must fail with an
// error naming the database, not kill the process with SIGBUS (bbolt reads
// the mmap past the end of the file): every rkt process that opens the
// store, the service included, would die at its start.
func TestOpenTruncatedDB(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(s.dbPath(), 2*int64(os.Getpagesize())); err != nil { // the two meta pages
		t.Fatal(err)
	}
	out, err := helper(t, "open", dir, "").CombinedOutput()
	if strings.Contains(string(out), "fatal error") || !strings.Contains(string(out), "store database") {
		t.Fatalf("opening a truncated store.db: %v\n%.600s", err, out)
	}
}
