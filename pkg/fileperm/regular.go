package fileperm

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	pathrs "github.com/cyphar/filepath-securejoin/pathrs-lite"
	"golang.org/x/sys/unix"
)

// ErrNotRegular is OpenRegular's refusal of anything but a regular file.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens p for reading if it is a regular file and p itself is
// not a symlink; anything else an image or checkpoint may put there is
// refused (ErrNotRegular) without being opened: a FIFO would block the
// open, a device node is one of the host's. The type is checked on an
// O_PATH handle, which opens nothing, and that same inode is then opened
// through /proc/self/fd, so nothing can swap the file in between.
func OpenRegular(p string) (*os.File, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("cannot stat %q: %w", p, err)
	}
	if err := checkRegular(&st, p); err != nil {
		return nil, err
	}
	f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), os.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot open %q: %w", p, err)
	}
	return f, nil
}

// OpenRegularInRoot is OpenRegular for p (absolute in root) resolved
// inside root, its symlinks included, on descriptors (pathrs-lite, as runc
// opens paths in a container's rootfs): a tree a running container writes
// cannot swap a symlink in while p is resolved and opened.
func OpenRegularInRoot(root, p string) (*os.File, error) {
	h, err := pathrs.OpenInRoot(root, p)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(h.Fd()), &st); err != nil {
		return nil, fmt.Errorf("cannot stat %s in %q: %w", p, root, err)
	}
	if err := checkRegular(&st, p+" in "+root); err != nil {
		return nil, err
	}
	return pathrs.Reopen(h, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK)
}

// checkRegular refuses (ErrNotRegular) what st describes unless it is a
// regular file; name names it in the error.
func checkRegular(st *unix.Stat_t, name string) error {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("cannot read %q (mode %#o): %w", name, st.Mode, ErrNotRegular)
	}
	return nil
}
