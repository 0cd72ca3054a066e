package store

import (
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestDatabaseLockTimeout(t *testing.T) {
	s := newStore(t)
	// Another process holding the database for writing (exclusive flock).
	db, err := bolt.Open(s.dbPath(), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s.SetDBTimeout(100 * time.Millisecond)
	start := time.Now()
	_, err = s.ListImages()
	if err == nil || !strings.Contains(err.Error(), "cannot open store database") {
		t.Errorf("ListImages while the database is locked: %v", err)
	}
	t.Logf("error: %v", err)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("waited %v for a 100ms timeout", d)
	}
	db.Close()
	// Released: the store works, and it holds nothing open between calls,
	// so another opener gets the lock right away.
	if _, err := s.ListImages(); err != nil {
		t.Fatal(err)
	}
	db, err = bolt.Open(s.dbPath(), 0o600, &bolt.Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("store kept the database open: %v", err)
	}
	db.Close()
}
