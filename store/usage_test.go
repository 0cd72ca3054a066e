package store

import (
	"archive/tar"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// agedDirs sets the modification time of the store's directories (but
// those inside layer trees) an hour back, as on a node whose store has not
// changed for a while.
func agedDirs(t *testing.T, s *Store) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	for _, d := range []string{".", "blobs", blobsDir, dbDir, treeDir, tmpDir} {
		if err := os.Chtimes(filepath.Join(s.Dir(), d), old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// duOf is what du counts under root: allocated bytes and inodes, each
// hard-linked file once (written apart from Usage's walk, to check it).
func duOf(t *testing.T, root string) Usage {
	t.Helper()
	var u Usage
	seen := map[uint64]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if !d.IsDir() && st.Nlink > 1 {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		u.Bytes += uint64(st.Blocks) * 512
		u.Inodes++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func checkUsage(t *testing.T, s *Store, when string) {
	t.Helper()
	got, err := s.Usage()
	if err != nil {
		t.Fatal(err)
	}
	want := duOf(t, s.Dir())
	if got.Bytes != want.Bytes || got.Inodes != want.Inodes {
		t.Errorf("%s: Usage %d bytes, %d inodes; a full walk %d, %d", when, got.Bytes, got.Inodes, want.Bytes, want.Inodes)
	}
}

// TestUsageListsChangedDirs: once the blobs' and trees' directories are
// old, Usage trusts their unchanged modification time; an image pulled or
// removed after that changes it, and is counted.
func TestUsageListsChangedDirs(t *testing.T) {
	reg := startRegistry(t)
	refA := reg.push(t, "u/a:1", testImage(t, "A=1", []entry{{name: "a", body: "a"}}))
	refB := reg.push(t, "u/b:1", testImage(t, "B=1", []entry{{name: "b", body: "b"}}))
	s := newStore(t)
	ctx := context.Background()
	if _, err := s.Fetch(ctx, refA, FetchOptions{Unpack: true}); err != nil {
		t.Fatal(err)
	}
	agedDirs(t, s)
	checkUsage(t, s, "aged")
	checkUsage(t, s, "aged, again")
	if _, err := s.Fetch(ctx, refB, FetchOptions{Unpack: true}); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, "after a pull")
	agedDirs(t, s)
	checkUsage(t, s, "aged after a pull")
	if _, err := s.RemoveImage(refA, RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, "after a removal")
	// any other time than the listed one is a change, an older one too
	// (a store restored from a backup)
	if _, err := s.Fetch(ctx, refA, FetchOptions{Unpack: true}); err != nil {
		t.Fatal(err)
	}
	agedDirs(t, s)
	checkUsage(t, s, "after a pull, the times set back")
	if err := os.WriteFile(filepath.Join(s.Dir(), dbDir, "other"), make([]byte, 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, "a file added to an aged directory")
	if err := os.WriteFile(filepath.Join(s.Dir(), dbDir, "other"), make([]byte, 256<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, "that file grown")
}

// TestUsageRacyMtime: a directory whose modification time was within a
// timestamp's granularity of its listing is listed again, though its time
// did not move: a change in the same clock tick (simulated here by
// putting the time back) would otherwise be missed.
func TestUsageRacyMtime(t *testing.T) {
	s := newStore(t)
	blobs := filepath.Join(s.Dir(), blobsDir)
	var st syscall.Stat_t
	if err := syscall.Stat(blobs, &st); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, "empty") // listed within a second of its last change
	if err := os.WriteFile(filepath.Join(blobs, "0123"), make([]byte, 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(st.Mtim.Unix())
	if err := os.Chtimes(blobs, mtime, mtime); err != nil { // the same tick
		t.Fatal(err)
	}
	checkUsage(t, s, "a blob added in the same tick")

	// the same in any other directory of the store
	if err := syscall.Stat(s.Dir(), &st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir(), "extra"), make([]byte, 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	mtime = time.Unix(st.Mtim.Unix())
	if err := os.Chtimes(s.Dir(), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, "a file added at the top in the same tick")
}

// TestUsageKeptFiguresFollowTheStore checks that the figures Usage keeps
// for blobs and trees stay those of a full walk as images come and go,
// their layers shared or not.
func TestUsageKeptFiguresFollowTheStore(t *testing.T) {
	reg := startRegistry(t)
	shared := []entry{{name: "shared", body: strings.Repeat("s", 300<<10)}}
	refA := reg.push(t, "u/a:1", testImage(t, "A=1", shared, []entry{{name: "a", body: strings.Repeat("a", 200<<10)}}))
	refB := reg.push(t, "u/b:1", testImage(t, "B=1", shared,
		[]entry{{name: "b1", body: "b"}, {name: "b2", typ: tar.TypeLink, linkname: "b1"}}))
	s := newStore(t)
	ctx := context.Background()
	checkUsage(t, s, "empty")
	for _, ref := range []string{refA, refB} {
		if _, err := s.Fetch(ctx, ref, FetchOptions{Unpack: true}); err != nil {
			t.Fatal(err)
		}
		checkUsage(t, s, "after "+ref)
	}
	if _, err := s.RemoveImage(refA, RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, "after removing "+refA)
	if _, err := s.RemoveImage(refB, RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, "after removing "+refB)
	if _, err := s.Fetch(ctx, refA, FetchOptions{Unpack: true}); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, "after fetching "+refA+" again")
}

// TestUsageMeasuresAgainWhatFailed: an entry whose measurement failed (out
// of descriptors, an I/O error) is measured again on the next call, not
// left out until its directory changes.
func TestUsageMeasuresAgainWhatFailed(t *testing.T) {
	reg := startRegistry(t)
	ref := reg.push(t, "u/fail:1", testImage(t, "A=1", []entry{{name: "a", body: strings.Repeat("a", 64<<10)}}))
	s := newStore(t)
	if _, err := s.Fetch(context.Background(), ref, FetchOptions{Unpack: true}); err != nil {
		t.Fatal(err)
	}
	agedDirs(t, s)
	walk := walkUsage
	walkUsage = func(string) (*Usage, error) { return nil, syscall.EMFILE }
	_, err := s.Usage()
	walkUsage = walk
	if err != nil {
		t.Fatal(err)
	}
	checkUsage(t, s, "after measurements that failed")
}
