package stage0

import (
	"context"
	"strconv"
	"syscall"

	"github.com/rkt/rkt/pkg/fsusage"
)

// FsUsage is the space a directory tree takes (an app's writable layer)
// and the filesystem it is on.
type FsUsage struct {
	Bytes, Inodes uint64
	Statfs        *syscall.Statfs_t // nil when statfs failed
	Device        string            // "major:minor"
	Mountpoint    string
}

// dirUsage measures the tree at dir (an app's writable layer, which the
// app fills as it likes) and finds its filesystem.
func dirUsage(ctx context.Context, dir string) FsUsage {
	u := FsUsage{Device: dir, Mountpoint: dir}
	t, _ := fsusage.Tree(ctx, dir) // what could be read: the app changes it meanwhile
	u.Bytes, u.Inodes = t.Bytes, t.Inodes
	var sfs syscall.Statfs_t
	if syscall.Statfs(dir, &sfs) == nil {
		u.Statfs = &sfs
	}
	var st syscall.Stat_t
	if syscall.Stat(dir, &st) == nil {
		u.Device = deviceName(st.Dev)
		if mp, err := fsusage.Mountpoint(dir); err == nil {
			u.Mountpoint = mp
		}
	}
	return u
}

// deviceName returns "major:minor" of a device number.
func deviceName(dev uint64) string {
	major := (dev >> 8) & 0xfff
	minor := (dev & 0xff) | ((dev >> 12) & 0xfff00)
	return strconv.FormatUint(major, 10) + ":" + strconv.FormatUint(minor, 10)
}
