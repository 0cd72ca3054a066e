package store

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// Usage is the space the store takes (for CRI ImageFsInfo).
type Usage struct {
	Bytes      uint64 // bytes used by files under the store (allocated blocks)
	Inodes     uint64 // files and directories under the store
	Mountpoint string // mountpoint of the filesystem holding the store
}

// Usage walks the store and returns its disk usage and mountpoint. Hard
// links are counted once.
func (s *Store) Usage() (*Usage, error) {
	u := &Usage{}
	seen := map[uint64]bool{}
	err := filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // entries removed while walking are not an error
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if st.Nlink > 1 && !d.IsDir() {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		u.Inodes++
		u.Bytes += uint64(st.Blocks) * 512
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot measure store %q: %w", s.dir, err)
	}
	mp, err := mountpointOf(s.dir)
	if err != nil {
		return nil, err
	}
	u.Mountpoint = mp
	return u, nil
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
