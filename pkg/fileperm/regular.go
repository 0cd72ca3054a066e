package fileperm

import (
	"errors"
	"fmt"
	"os"
	"strconv"

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
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("cannot read %q (mode %#o): %w", p, st.Mode, ErrNotRegular)
	}
	f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), os.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot open %q: %w", p, err)
	}
	return f, nil
}
