package kubeletsvc

import (
	"io/fs"
	"path/filepath"
	"syscall"
)

// fsUsage is the space a directory tree takes (a container's writable
// layer) and the filesystem it is on.
type fsUsage struct {
	bytes, inodes uint64
	statfs        *syscall.Statfs_t // nil when statfs failed
	device        string            // "major:minor"
	mountpoint    string
}

// dirUsage walks dir and adds up the blocks allocated to its entries.
func dirUsage(dir string) fsUsage {
	u := fsUsage{device: dir, mountpoint: dir}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished meanwhile
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				u.bytes += uint64(st.Blocks) * 512
				u.inodes++
			}
		}
		return nil
	})
	var sfs syscall.Statfs_t
	if syscall.Statfs(dir, &sfs) == nil {
		u.statfs = &sfs
	}
	var st syscall.Stat_t
	if syscall.Stat(dir, &st) == nil {
		u.device = deviceName(st.Dev)
		u.mountpoint = mountpointOf(dir, st.Dev)
	}
	return u
}

// mountpointOf walks up from p (on device dev) to the top of its
// filesystem.
func mountpointOf(p string, dev uint64) string {
	for p != "/" {
		parent := filepath.Dir(p)
		var st syscall.Stat_t
		if syscall.Stat(parent, &st) != nil || st.Dev != dev {
			return p
		}
		p = parent
	}
	return "/"
}
