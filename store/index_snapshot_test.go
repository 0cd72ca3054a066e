package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestKeptIndexFollowsOtherWriters: a Store that keeps its index answers
// as a fresh read of the database does after every change another
// process (here another Store) makes: pulls, a tag moved to a new image,
// removals, and the database file replaced.
func TestKeptIndexFollowsOtherWriters(t *testing.T) {
	reg := startRegistry(t)
	kept, other, dir := keptAndOther(t)
	check := func(when string, refs ...string) {
		t.Helper()
		got, err := kept.ListImages()
		if err != nil {
			t.Fatal(err)
		}
		want, err := other.ListImages()
		if err != nil {
			t.Fatal(err)
		}
		ids := func(imgs []*Image) (out []string) {
			for _, i := range imgs {
				out = append(out, i.ID+" "+slices.Concat(i.Names, i.RepoDigests)[0])
			}
			return out
		}
		if !slices.Equal(ids(got), ids(want)) {
			t.Errorf("%s: kept index lists %v, the database %v", when, ids(got), ids(want))
		}
		for _, ref := range refs {
			a, errA := kept.ResolveImage(ref)
			b, errB := other.ResolveImage(ref)
			switch {
			case (errA == nil) != (errB == nil):
				t.Errorf("%s: %s resolves to %v from the kept index, %v from the database", when, ref, errA, errB)
			case errA == nil && a.ID != b.ID:
				t.Errorf("%s: %s is %s in the kept index, %s in the database", when, ref, a.ID, b.ID)
			}
		}
	}
	one := reg.push(t, "k/one:1", testImage(t, "ONE=1", []entry{{name: "a", body: "a"}}))
	two := reg.push(t, "k/two:1", testImage(t, "TWO=1", []entry{{name: "b", body: "b"}}))
	ctx := context.Background()
	check("empty", one)
	img1, err := other.Fetch(ctx, one, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("after a pull", one, img1.ID, img1.ShortID())
	if _, err := other.Fetch(ctx, two, FetchOptions{}); err != nil {
		t.Fatal(err)
	}
	check("after another", one, two)
	moved := reg.push(t, "k/one:1", testImage(t, "ONE=2", []entry{{name: "c", body: "c"}}))
	if _, err := other.Fetch(ctx, moved, FetchOptions{}); err != nil {
		t.Fatal(err)
	}
	check("after the tag moved", one, two, img1.ID)
	if _, err := other.RemoveImage(two, RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	check("after a removal", one, two)
	db := filepath.Join(dir, casDir, dbDir, dbFile)
	if err := os.Rename(db, db+".old"); err != nil {
		t.Fatal(err)
	}
	if other, err = Open(dir); err != nil { // a new, empty index
		t.Fatal(err)
	}
	check("after the database was replaced", one, two)
}

// TestKeptIndexDecodesChangedRecordsOnly: after another process changed
// one image's record (a MarkUsed), the kept index answers with the new
// record and keeps the decoded records of the others.
func TestKeptIndexDecodesChangedRecordsOnly(t *testing.T) {
	reg := startRegistry(t)
	kept, other, _ := keptAndOther(t)
	ctx := context.Background()
	var ids []string
	for _, ref := range []string{
		reg.push(t, "k/used:1", testImage(t, "U=1", []entry{{name: "a", body: "a"}})),
		reg.push(t, "k/idle:1", testImage(t, "I=1", []entry{{name: "b", body: "b"}})),
	} {
		img, err := other.Fetch(ctx, ref, FetchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, img.ID)
	}
	before, err := kept.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := other.MarkUsed(ids[0]); err != nil {
		t.Fatal(err)
	}
	after, err := kept.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Fatal("the kept index was not read again after a write")
	}
	want, err := other.ResolveImage(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := after.images[ids[0]]; got == before.images[ids[0]] || !got.LastUsedAt.Equal(want.LastUsedAt) {
		t.Errorf("the changed record: last used %v, want %v (the record decoded before the write: %v)",
			got.LastUsedAt, want.LastUsedAt, got == before.images[ids[0]])
	}
	if after.images[ids[1]] != before.images[ids[1]] {
		t.Error("the unchanged record was decoded again")
	}
}

// keptAndOther opens two Stores of one new data dir: the first keeps its
// index, the second stands for another process.
func keptAndOther(t *testing.T) (kept, other *Store, dir string) {
	t.Helper()
	dir = t.TempDir()
	kept, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	kept.KeepIndex()
	if other, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	return kept, other, dir
}

// TestKeptIndexReadsWithoutTheLock: while nothing changed, a lookup in a
// kept index does not open the database, so it is not held up by a
// writer's lock (a long transaction of another process).
func TestKeptIndexReadsWithoutTheLock(t *testing.T) {
	reg := startRegistry(t)
	ref := reg.push(t, "k/lock:1", testImage(t, "L=1", []entry{{name: "a", body: "a"}}))
	s := newStore(t)
	if _, err := s.Fetch(context.Background(), ref, FetchOptions{}); err != nil {
		t.Fatal(err)
	}
	s.SetDBTimeout(200 * time.Millisecond)
	f, err := os.Open(s.dbPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lock := func() {
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			t.Fatal(err)
		}
	}
	lock()
	if _, err := s.ResolveImage(ref); err == nil {
		t.Fatal("a lookup without a kept index passed a writer's lock: the test cannot tell")
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	s.KeepIndex()
	if _, err := s.ResolveImage(ref); err != nil { // decodes the index
		t.Fatal(err)
	}
	lock()
	if _, err := s.ResolveImage(ref); err != nil {
		t.Errorf("a lookup in the kept index waited for the writer's lock: %v", err)
	}
	if _, err := s.ListImages(); err != nil {
		t.Errorf("a list of the kept index waited for the writer's lock: %v", err)
	}
	if _, err := s.ResolveImage("k/absent:1"); !errors.Is(err, ErrImageNotFound) {
		t.Errorf("an absent image in the kept index: %v, want ErrImageNotFound", err)
	}
}

// TestRepullWritesNothing: asking the registry again for an image the
// store has as it serves it (PullUpdate: the CRI's PullImage, at every
// container start under the kubelet's Always policy) commits no
// transaction; a new name of the image does.
func TestRepullWritesNothing(t *testing.T) {
	reg := startRegistry(t)
	ref := reg.push(t, "k/again:1", testImage(t, "A=1", []entry{{name: "a", body: "a"}}))
	s := newStore(t)
	ctx := context.Background()
	txid := func() uint64 {
		t.Helper()
		v, ok := s.newestState()
		if !ok {
			t.Fatal("no valid meta page")
		}
		return v.txid
	}
	first, err := s.Fetch(ctx, ref, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := txid()
	again, err := s.Fetch(ctx, ref, FetchOptions{PullPolicy: PullUpdate})
	if err != nil {
		t.Fatal(err)
	}
	if after := txid(); after != before || again.ID != first.ID {
		t.Errorf("a pull of an unchanged image: txid %d -> %d, image %s -> %s", before, after, first.ID, again.ID)
	}
	alias := reg.push(t, "k/alias:1", testImage(t, "A=1", []entry{{name: "a", body: "a"}}))
	if _, err := s.Fetch(ctx, alias, FetchOptions{PullPolicy: PullUpdate}); err != nil {
		t.Fatal(err)
	}
	if got := txid(); got == before {
		t.Error("a new name of the image was not recorded")
	}
	if img, err := s.ResolveImage(alias); err != nil || img.ID != first.ID {
		t.Errorf("the new name: %v, %v", img, err)
	}
}
