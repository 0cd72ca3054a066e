package store

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Usage is the space the store takes (for CRI ImageFsInfo).
type Usage struct {
	Bytes      uint64 // bytes used by files under the store (allocated blocks)
	Inodes     uint64 // files and directories under the store
	Mountpoint string // mountpoint of the filesystem holding the store
}

// usageCache keeps the measured usage of the store's blobs and layer trees.
// Both never change once in place (a blob's name is its digest, a tree's
// its chain ID, and both are renamed into place complete), so each is
// measured once and its figures kept while its name is listed; and the
// two directories are listed again only when their modification time
// says an entry came or went.
type usageCache struct {
	mu   sync.Mutex
	dirs map[string]*keptDir // blobsDir, treeDir
	// the mountpoint found for the store's device
	dev        uint64
	mountpoint string
}

// keptDir is what was measured of the blobs' or the trees' directory.
type keptDir struct {
	mtime    syscall.Timespec // the directory's when listed
	listedAt time.Time        // taken before the listing
	entries  map[string]Usage // by name
	sum      Usage            // of the entries
}

// racyMtime is how long before a listing a directory's modification time
// must be for a later call to trust that an unchanged one means unchanged
// entries: a change within the file system's timestamp granularity (a
// clock tick, or more on some file systems) of the listing may leave it
// as it was.
const racyMtime = time.Second

// Usage returns the store's disk usage and mountpoint. Hard links are
// counted once. It measures only the blobs and trees it has not measured
// before, and lists them only when they changed (the kubelet asks every
// few seconds; a walk of every layer's files would cost as much as the
// layers have files).
func (s *Store) Usage() (*Usage, error) {
	s.usage.mu.Lock()
	defer s.usage.mu.Unlock()
	kept := map[string]string{filepath.Join(s.dir, blobsDir): blobsDir, filepath.Join(s.dir, treeDir): treeDir}
	dirs := make(map[string]*keptDir, len(kept))
	u, err := walkUsage(s.dir, func(p string, d fs.DirEntry) (Usage, bool) {
		rel, ok := kept[p]
		if !ok {
			return Usage{}, false
		}
		fi, err := d.Info()
		if err != nil {
			return Usage{}, false
		}
		st := fi.Sys().(*syscall.Stat_t)
		k, err := s.usage.listDir(p, st.Mtim, s.usage.dirs[rel])
		if err != nil {
			return Usage{}, false // walked as any directory
		}
		dirs[rel] = k
		return Usage{Bytes: uint64(st.Blocks)*512 + k.sum.Bytes, Inodes: 1 + k.sum.Inodes}, true
	})
	if err != nil {
		return nil, fmt.Errorf("cannot measure store %q: %w", s.dir, err)
	}
	s.usage.dirs = dirs
	mp, err := s.usage.mountpointOf(s.dir)
	if err != nil {
		return nil, err
	}
	u.Mountpoint = mp
	return u, nil
}

// listDir returns what dir (the blobs' or the trees' directory, of
// modification time mtime) holds: prev when its time says nothing came or
// went since prev was listed, else a new listing that measures only the
// entries prev does not have.
func (c *usageCache) listDir(dir string, mtime syscall.Timespec, prev *keptDir) (*keptDir, error) {
	if prev != nil && prev.mtime == mtime && time.Unix(mtime.Unix()).Before(prev.listedAt.Add(-racyMtime)) {
		return prev, nil
	}
	k := &keptDir{mtime: mtime, listedAt: time.Now(), entries: map[string]Usage{}}
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	entries, err := f.ReadDir(-1) // unsorted
	f.Close()
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		u, ok := prev.entry(e.Name())
		if !ok {
			if e.IsDir() {
				m, err := walkUsage(filepath.Join(dir, e.Name()), nil)
				if err != nil {
					continue // measured next time
				}
				u = *m
			} else if u, ok = fileUsage(e, nil); !ok {
				continue
			}
		}
		k.entries[e.Name()] = u
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

// walkUsage sums the usage of the tree at root. For each entry below root,
// known may give its whole usage (a directory's then is not read).
func walkUsage(root string, known func(p string, d fs.DirEntry) (Usage, bool)) (*Usage, error) {
	u := &Usage{}
	seen := map[uint64]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // entries removed while walking are not an error
		}
		if known != nil && p != root {
			if c, ok := known(p, d); ok {
				u.Bytes += c.Bytes
				u.Inodes += c.Inodes
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
		}
		if c, ok := fileUsage(d, seen); ok {
			u.Bytes += c.Bytes
			u.Inodes += c.Inodes
		}
		return nil
	})
	return u, err
}

// fileUsage is the usage of one entry: none for a further link to an inode
// in seen (nil: links are not looked at).
func fileUsage(d fs.DirEntry, seen map[uint64]bool) (Usage, bool) {
	fi, err := d.Info()
	if err != nil {
		return Usage{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Usage{}, false
	}
	if seen != nil && st.Nlink > 1 && !d.IsDir() {
		if seen[st.Ino] {
			return Usage{}, true
		}
		seen[st.Ino] = true
	}
	return Usage{Bytes: uint64(st.Blocks) * 512, Inodes: 1}, true
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
	mp, err := walkToMountpoint(p, &st)
	if err == nil {
		c.dev, c.mountpoint = st.Dev, mp
	}
	return mp, err
}

// walkToMountpoint walks up from p, of stat st, until the device changes.
func walkToMountpoint(p string, st *unix.Stat_t) (string, error) {
	for p != "/" {
		parent := filepath.Dir(p)
		var pst unix.Stat_t
		if err := unix.Stat(parent, &pst); err != nil {
			return "", fmt.Errorf("cannot stat %q: %w", parent, err)
		}
		if pst.Dev != st.Dev || pst.Ino == st.Ino {
			return p, nil
		}
		p = parent
	}
	return "/", nil
}
