// Package appuser resolves the user an app runs as from the app's own
// /etc/passwd and /etc/group. stage0 uses it to build an app's spec and
// stage1 for the user of an exec, so both read the image the same way.
package appuser

import (
	"fmt"
	"io"
	"os"
	"strconv"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/moby/sys/user"
	"golang.org/x/sys/unix"
)

// Lookup resolves spec ("", name, uid, name:group, uid:gid...) against
// rootfs's /etc/passwd and /etc/group, both resolved inside rootfs so that
// symlinks cannot point out of it. Missing files, or an empty rootfs, leave
// numeric ids as given and default to uid 0, gid 0, home "/".
func Lookup(rootfs, spec string) (*user.ExecUser, error) {
	var passwd, group string
	if rootfs != "" {
		var err error
		if passwd, err = securejoin.SecureJoin(rootfs, "/etc/passwd"); err != nil {
			return nil, fmt.Errorf("cannot resolve /etc/passwd in %q: %w", rootfs, err)
		}
		if group, err = securejoin.SecureJoin(rootfs, "/etc/group"); err != nil {
			return nil, fmt.Errorf("cannot resolve /etc/group in %q: %w", rootfs, err)
		}
	}
	var passwdR, groupR io.Reader
	for _, f := range []struct {
		path string
		r    *io.Reader
	}{{passwd, &passwdR}, {group, &groupR}} {
		file, err := openRegular(f.path)
		if err != nil {
			return nil, err
		}
		if file != nil {
			defer file.Close()
			*f.r = file
		}
	}
	u, err := user.GetExecUser(spec, &user.ExecUser{Uid: 0, Gid: 0, Home: "/"}, passwdR, groupR)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve user %q in the image: %w", spec, err)
	}
	return u, nil
}

// openRegular opens p, a file of an image, for reading if it is a regular
// file, and returns nil if it cannot be opened (it is missing, as
// user.GetExecUserPath takes it). Anything else an image may put there is
// refused without being opened: opening a FIFO waits for a writer, a
// device node is one of the host's (a disk, /dev/urandom, a watchdog).
// The type is checked on an O_PATH handle, which opens nothing, and the
// same inode is then opened through /proc/self/fd, so a running container
// cannot swap the file in between.
func openRegular(p string) (*os.File, error) {
	if p == "" {
		return nil, nil
	}
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("cannot stat %q: %w", p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("cannot read %q: not a regular file (mode %#o)", p, st.Mode)
	}
	f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), os.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot open %q: %w", p, err)
	}
	return f, nil
}
