package store

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"

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
// measured once and its figures kept while its name is listed.
type usageCache struct {
	mu    sync.Mutex
	known map[string]Usage // "blobs/sha256/<hex>", "tree/<name>" -> its usage
}

// Usage returns the store's disk usage and mountpoint. Hard links are
// counted once. It lists the store and measures only the blobs and trees
// it has not measured before (the kubelet asks every few seconds; a walk
// of every layer's files would cost as much as the layers have files).
func (s *Store) Usage() (*Usage, error) {
	s.usage.mu.Lock()
	defer s.usage.mu.Unlock()
	immutable := map[string]bool{filepath.Join(s.dir, blobsDir): true, filepath.Join(s.dir, treeDir): true}
	listed := make(map[string]Usage, len(s.usage.known))
	u, err := walkUsage(s.dir, func(p string, d fs.DirEntry) (Usage, bool) {
		if !immutable[filepath.Dir(p)] {
			return Usage{}, false
		}
		rel := p[len(s.dir)+1:]
		c, ok := s.usage.known[rel]
		if !ok {
			if d.IsDir() {
				m, err := walkUsage(p, nil)
				if err != nil {
					return Usage{}, false // measured again next time
				}
				c = *m
			} else if c, ok = fileUsage(d, map[uint64]bool{}); !ok {
				return Usage{}, false
			}
		}
		listed[rel] = c
		return c, true
	})
	if err != nil {
		return nil, fmt.Errorf("cannot measure store %q: %w", s.dir, err)
	}
	s.usage.known = listed // what is gone is forgotten
	mp, err := mountpointOf(s.dir)
	if err != nil {
		return nil, err
	}
	u.Mountpoint = mp
	return u, nil
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
// in seen.
func fileUsage(d fs.DirEntry, seen map[uint64]bool) (Usage, bool) {
	fi, err := d.Info()
	if err != nil {
		return Usage{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Usage{}, false
	}
	if st.Nlink > 1 && !d.IsDir() {
		if seen[st.Ino] {
			return Usage{}, true
		}
		seen[st.Ino] = true
	}
	return Usage{Bytes: uint64(st.Blocks) * 512, Inodes: 1}, true
}

// mountpointOf walks up from p until the device changes.
func mountpointOf(p string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return "", fmt.Errorf("cannot stat %q: %w", p, err)
	}
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
