// Package fsusage measures the space a directory tree takes, as du does:
// the blocks allocated and the inodes, each hard-linked inode once. The
// trees it measures can be a container's (an app's writable layer), so it
// reads each directory in batches, relative to its parent's descriptor:
// its memory does not grow with the number of entries of a directory, and
// a path's length does not stop it.
package fsusage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Usage is the space a tree takes.
type Usage struct {
	Bytes, Inodes uint64
}

// MaxDepth bounds how deep below its root a walk descends: a directory
// that deep counts, what it holds does not. The walk holds one descriptor
// per level.
const MaxDepth = 1024

// batch is how many names a walk reads from a directory at a time.
const batch = 128

type inode struct{ dev, ino uint64 }

type walk struct {
	ctx  context.Context
	u    Usage
	seen map[inode]bool // hard-linked inodes counted
	err  error          // the first error but a vanished entry's
}

// Tree returns the usage of the tree (or the file) at root. Entries removed
// during the walk are left out; any other error stops the walk of the
// directory it is in, and the first one is returned with what was counted.
// A cancelled ctx stops the walk between batches, with ctx's error.
func Tree(ctx context.Context, root string) (Usage, error) {
	var st unix.Stat_t
	if err := unix.Lstat(root, &st); err != nil {
		return Usage{}, fmt.Errorf("cannot stat %q: %w", root, err)
	}
	w := walk{ctx: ctx, seen: map[inode]bool{}}
	w.add(&st)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return w.u, nil
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return w.u, fmt.Errorf("cannot open %q: %w", root, err)
	}
	w.dir(root, fd, 1)
	return w.u, w.err
}

func (w *walk) add(st *unix.Stat_t) {
	if st.Nlink > 1 && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		k := inode{st.Dev, st.Ino}
		if w.seen[k] {
			return
		}
		w.seen[k] = true
	}
	w.u.Bytes += uint64(st.Blocks) * 512
	w.u.Inodes++
}

func (w *walk) fail(err error) {
	if w.err == nil && !errors.Is(err, unix.ENOENT) {
		w.err = err
	}
}

// dir counts what the directory open as fd holds (path names it in
// errors) and closes fd.
func (w *walk) dir(path string, fd int, depth int) {
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	for {
		if err := w.ctx.Err(); err != nil {
			w.fail(err)
			return
		}
		names, err := f.Readdirnames(batch)
		for _, name := range names {
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				w.fail(fmt.Errorf("cannot stat %q: %w", filepath.Join(path, name), err))
				continue
			}
			w.add(&st)
			if st.Mode&unix.S_IFMT != unix.S_IFDIR || depth >= MaxDepth {
				continue
			}
			cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				w.fail(fmt.Errorf("cannot open %q: %w", filepath.Join(path, name), err))
				continue
			}
			w.dir(filepath.Join(path, name), cfd, depth+1)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				w.fail(fmt.Errorf("cannot list %q: %w", path, err))
			}
			return
		}
	}
}

// Mountpoint returns the top of the filesystem p is on: p or the last of
// its parents on the same device.
func Mountpoint(p string) (string, error) {
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
		p, st = parent, pst
	}
	return "/", nil
}
