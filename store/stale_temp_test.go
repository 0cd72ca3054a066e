package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestGCRemovesStaleWriteTemps: the temporary file of an atomic write
// whose writer was killed before its rename (here of the rkt 1.x import's
// record, in the store's root) is removed by `rkt image gc` (GC) and by the
// service's sweep (SweepUnreferenced), also while a fetch runs; a recent
// one, maybe still being written, and the record itself are kept.
func TestGCRemovesStaleWriteTemps(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		fetching bool
		gc       func(*Store) error
	}{
		{"GC", false, func(s *Store) error { _, err := s.GC(ctx, time.Hour, nil); return err }},
		{"GC during a fetch", true, func(s *Store) error { _, err := s.GC(ctx, time.Hour, nil); return err }},
		{"SweepUnreferenced", false, func(s *Store) error { _, err := s.SweepUnreferenced(ctx); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			old := time.Now().Add(-time.Hour)
			record := filepath.Join(s.Dir(), legacyMarker)
			stale := filepath.Join(s.Dir(), "."+legacyMarker+".tmp2840184913")
			fresh := filepath.Join(s.Dir(), "."+legacyMarker+".tmp117325089")
			for _, f := range []struct {
				path  string
				mtime time.Time
			}{{record, old}, {stale, old}, {fresh, time.Now()}} {
				if err := os.WriteFile(f.path, []byte("{}\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(f.path, f.mtime, f.mtime); err != nil {
					t.Fatal(err)
				}
			}
			if tc.fetching {
				l, err := s.holdFetchLock(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
			}
			if err := tc.gc(s); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(stale); err == nil {
				t.Errorf("stale temporary file %s kept", stale)
			}
			for _, p := range []string{fresh, record} {
				if _, err := os.Lstat(p); err != nil {
					t.Errorf("%s removed: %v", p, err)
				}
			}
		})
	}
}
