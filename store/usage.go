package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/fsusage"
)

// Usage is the space the store takes (for CRI ImageFsInfo).
type Usage struct {
	Bytes      uint64 // bytes used by files under the store (allocated blocks)
	Inodes     uint64 // files and directories under the store
	Mountpoint string // mountpoint of the filesystem holding the store
}

// usageCache keeps what Usage measured. The store's blobs and layer trees
// never change once in place (a blob's name is its digest, a tree's its
// chain ID, and both are renamed into place complete), so each is
// measured once and its figures kept while its name is listed. And a
// directory is listed again only when its modification time says an entry
// came or went; the other entries' sizes are read at each call.
type usageCache struct {
	mu       sync.Mutex
	kept     map[string]*keptDir // the blobs' and trees' directories
	listings map[string]*listing // the other directories
	// the mountpoint found for the store's device
	dev        uint64
	mountpoint string
}

// listing is a directory's entries as of its modification time.
type listing struct {
	mtime    syscall.Timespec // the directory's when listed
	listedAt time.Time        // taken before the listing
	names    []string
}

// keptDir is what was measured of the blobs' or the trees' directory.
type keptDir struct {
	listing
	entries map[string]Usage // by name
	sum     Usage            // of the entries
	// missing: an entry could not be measured (it is listed again, and
	// measured, on next use)
	missing bool
}

// racyMtime is how long before a listing a directory's modification time
// must be for a later call to trust that an unchanged one means unchanged
// entries: a change within the file system's timestamp granularity (a
// clock tick, or more on some file systems) of the listing may leave it
// as it was.
const racyMtime = time.Second

// current reports whether l is still what its directory holds, the
// directory's modification time being mtime.
func (l *listing) current(mtime syscall.Timespec) bool {
	return l != nil && mtime == l.mtime && time.Unix(mtime.Unix()).Before(l.listedAt.Add(-racyMtime))
}

// list reads the entries of directory p, of modification time mtime.
func list(p string, mtime syscall.Timespec) (listing, error) {
	l := listing{mtime: mtime, listedAt: time.Now()} // the time before the reading
	f, err := os.Open(p)
	if err != nil {
		return l, err
	}
	defer f.Close()
	l.names, err = f.Readdirnames(-1)
	return l, err
}

// Usage returns the store's disk usage and mountpoint. Hard links are
// counted once. It measures only the blobs and trees it has not measured
// before, and lists a directory only when it changed (the kubelet asks
// every few seconds; a walk of every layer's files would cost as much as
// the layers have files).
func (s *Store) Usage() (*Usage, error) {
	s.usage.mu.Lock()
	defer s.usage.mu.Unlock()
	var st syscall.Stat_t
	if err := syscall.Lstat(s.dir, &st); err != nil {
		return nil, fmt.Errorf("cannot measure store %q: %w", s.dir, err)
	}
	w := usageWalk{c: &s.usage, u: &Usage{}, seen: map[uint64]bool{},
		kept:     map[string]bool{filepath.Join(s.dir, blobsDir): true, filepath.Join(s.dir, treeDir): true},
		nextKept: map[string]*keptDir{}, nextListings: map[string]*listing{}}
	if err := w.dir(s.dir, &st); err != nil {
		return nil, fmt.Errorf("cannot measure store %q: %w", s.dir, err)
	}
	s.usage.kept, s.usage.listings = w.nextKept, w.nextListings // what is gone is forgotten
	mp, err := s.usage.mountpointOf(s.dir)
	if err != nil {
		return nil, err
	}
	w.u.Mountpoint = mp
	return w.u, nil
}

// usageWalk is one walk of Usage.
type usageWalk struct {
	c            *usageCache
	u            *Usage
	seen         map[uint64]bool // inodes of hard links counted
	kept         map[string]bool // the blobs' and trees' directories
	nextKept     map[string]*keptDir
	nextListings map[string]*listing // nil: nothing kept for the next walk
}

// dir adds the usage of directory p, of stat st, and of what it holds.
func (w *usageWalk) dir(p string, st *syscall.Stat_t) error {
	w.add(st)
	if w.kept[p] {
		k, err := w.c.listDir(p, st.Mtim, w.c.kept[p])
		if err != nil {
			return err
		}
		w.nextKept[p] = k
		w.u.Bytes += k.sum.Bytes
		w.u.Inodes += k.sum.Inodes
		return nil
	}
	l := w.c.listings[p]
	if !l.current(st.Mtim) {
		fresh, err := list(p, st.Mtim)
		if err != nil {
			return err
		}
		l = &fresh
	}
	if w.nextListings != nil {
		w.nextListings[p] = l
	}
	for _, name := range l.names {
		q := p + "/" + name
		var est syscall.Stat_t
		if syscall.Lstat(q, &est) != nil {
			continue // removed meanwhile
		}
		if est.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			w.add(&est)
		} else if err := w.dir(q, &est); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// add counts one inode, a further link to an inode already seen excepted.
func (w *usageWalk) add(st *syscall.Stat_t) {
	if st.Nlink > 1 && st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		if w.seen[st.Ino] {
			return
		}
		w.seen[st.Ino] = true
	}
	w.u.Bytes += uint64(st.Blocks) * 512
	w.u.Inodes++
}

// listDir returns what dir (the blobs' or the trees' directory, of
// modification time mtime) holds: prev when its time says nothing came or
// went since prev was listed, else a new listing that measures only the
// entries prev does not have.
func (c *usageCache) listDir(dir string, mtime syscall.Timespec, prev *keptDir) (*keptDir, error) {
	if prev != nil && !prev.missing && prev.current(mtime) {
		return prev, nil
	}
	l, err := list(dir, mtime)
	if err != nil {
		return nil, err
	}
	k := &keptDir{listing: l, entries: map[string]Usage{}}
	for _, name := range l.names {
		u, ok := prev.entry(name)
		if !ok {
			m, err := walkUsage(dir + "/" + name)
			if err != nil {
				k.missing = true // measured next time
				continue
			}
			u = *m
		}
		k.entries[name] = u
		k.sum.Bytes += u.Bytes
		k.sum.Inodes += u.Inodes
	}
	return k, nil
}

func (k *keptDir) entry(name string) (Usage, bool) {
	if k == nil {
		return Usage{}, false
	}
	u, ok := k.entries[name]
	return u, ok
}

// walkUsage sums the usage of the tree (or file) at root, reading all of
// it (the store's own trees: not cut short). A variable: tests make it
// fail.
var walkUsage = func(root string) (*Usage, error) {
	t, err := fsusage.Tree(context.Background(), root)
	if err != nil {
		return nil, err
	}
	return &Usage{Bytes: t.Bytes, Inodes: t.Inodes}, nil
}

// mountpointOf walks up from p until the device changes, once for each
// device p is on.
func (c *usageCache) mountpointOf(p string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return "", fmt.Errorf("cannot stat %q: %w", p, err)
	}
	if c.mountpoint != "" && c.dev == st.Dev {
		return c.mountpoint, nil
	}
	mp, err := fsusage.Mountpoint(p)
	if err == nil {
		c.dev, c.mountpoint = st.Dev, mp
	}
	return mp, err
}
