package stage0

import (
	"io/fs"
	"path/filepath"
	"strconv"
	"syscall"
)

// FsUsage is the space a directory tree takes (an app's writable layer)
// and the filesystem it is on.
type FsUsage struct {
	Bytes, Inodes uint64
	Statfs        *syscall.Statfs_t // nil when statfs failed
	Device        string            // "major:minor"
	Mountpoint    string
}

// dirUsage walks dir and adds up the blocks allocated to its entries.
func dirUsage(dir string) FsUsage {
	u := FsUsage{Device: dir, Mountpoint: dir}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished meanwhile
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				u.Bytes += uint64(st.Blocks) * 512
				u.Inodes++
			}
		}
		return nil
	})
	var sfs syscall.Statfs_t
	if syscall.Statfs(dir, &sfs) == nil {
		u.Statfs = &sfs
	}
	var st syscall.Stat_t
	if syscall.Stat(dir, &st) == nil {
		u.Device = deviceName(st.Dev)
		u.Mountpoint = mountpointOf(dir, st.Dev)
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

// deviceName returns "major:minor" of a device number.
func deviceName(dev uint64) string {
	major := (dev >> 8) & 0xfff
	minor := (dev & 0xff) | ((dev >> 12) & 0xfff00)
	return strconv.FormatUint(major, 10) + ":" + strconv.FormatUint(minor, 10)
}
