package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// writeDB creates <dataDir>/cas/db/store.db with fill's content.
func writeDB(t *testing.T, dataDir string, fill func(*bolt.Tx) error) {
	t.Helper()
	p := filepath.Join(dataDir, casDir, dbDir, "store.db")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(p, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fill); err != nil {
		t.Fatal(err)
	}
}

// TestIndexFormatVersions: an index of the first release (no version) is
// read and gets its version recorded, with its images intact; an index of
// a newer rkt is refused with a clear error, not misread.
func TestIndexFormatVersions(t *testing.T) {
	old := t.TempDir()
	writeDB(t, old, func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketImages, bucketRefs, bucketConfigs} {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketRefs).Put([]byte("example.org/app:1"), []byte("sha256:1234"))
	})
	s, err := Open(old)
	if err != nil {
		t.Fatalf("an unversioned (format 1) index: %v", err)
	}
	err = s.view(func(tx *txn) error {
		if v := tx.tx.Bucket(bucketMeta).Get(keyVersion); string(v) != "1" {
			t.Errorf("recorded version %q, want 1", v)
		}
		if id := tx.tx.Bucket(bucketRefs).Get([]byte("example.org/app:1")); string(id) != "sha256:1234" {
			t.Errorf("the old index lost a ref: %q", id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	newer := t.TempDir()
	writeDB(t, newer, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		return b.Put(keyVersion, []byte("99"))
	})
	if _, err := Open(newer); !errors.Is(err, ErrNewerFormat) {
		t.Fatalf("a format 99 index: %v, want ErrNewerFormat", err)
	}
}
