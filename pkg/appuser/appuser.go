// Package appuser resolves the user an app runs as from the app's own
// /etc/passwd and /etc/group. stage0 uses it to build an app's spec and
// stage1 for the user of an exec, so both read the image the same way.
package appuser

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/moby/sys/user"

	"github.com/rkt/rkt/pkg/fileperm"
)

// MaxFileSize bounds an image's /etc/passwd and /etc/group. They are
// hostile input: a 2 MB gzip layer holds a 2 GB group line, which the
// parser reads whole and splits into a string per member (some 10 times its
// size in memory). Real ones are a few KiB.
const MaxFileSize = 4 << 20

// ErrTooLarge is the error of a /etc/passwd or /etc/group over MaxFileSize.
var ErrTooLarge = errors.New("file is larger than 4 MiB")

// capReader fails a read past left bytes (a file that grew after its size
// was checked).
type capReader struct {
	r    io.Reader
	left int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var b [1]byte
		if n, _ := c.r.Read(b[:]); n > 0 {
			return 0, ErrTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// Lookup resolves spec ("", name, uid, name:group, uid:gid...) against
// rootfs's /etc/passwd and /etc/group, both opened inside rootfs so that
// symlinks cannot point out of it, even swapped in while they are opened
// (the rootfs of a running container). Missing files, or an empty rootfs,
// leave numeric ids as given and default to uid 0, gid 0, home "/".
func Lookup(rootfs, spec string) (*user.ExecUser, error) {
	var passwdR, groupR io.Reader
	for _, f := range []struct {
		path string
		r    *io.Reader
	}{{"/etc/passwd", &passwdR}, {"/etc/group", &groupR}} {
		if rootfs == "" {
			break
		}
		file, err := fileperm.OpenRegularInRoot(rootfs, f.path)
		switch {
		case errors.Is(err, fileperm.ErrNotRegular):
			return nil, err
		case err != nil:
			continue // missing or unreadable: none, as user.GetExecUserPath takes it
		}
		defer file.Close()
		st, err := file.Stat()
		if err != nil {
			return nil, fmt.Errorf("cannot stat %s in %q: %w", f.path, rootfs, err)
		}
		if st.Size() > MaxFileSize {
			return nil, fmt.Errorf("cannot read %s in %q (%d bytes): %w", f.path, rootfs, st.Size(), ErrTooLarge)
		}
		*f.r = &capReader{r: file, left: MaxFileSize}
	}
	u, err := user.GetExecUser(spec, &user.ExecUser{Uid: 0, Gid: 0, Home: "/"}, passwdR, groupR)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve user %q in the image: %w", spec, err)
	}
	// The image's files may give any number; -1 and 2^32-1 are the
	// kernel's "no change" to setresuid and setresgid: the process would
	// stay root. The library checks the range of numeric arguments only.
	for _, id := range append([]int{u.Uid, u.Gid}, u.Sgids...) {
		if id < 0 || id >= 1<<32-1 {
			return nil, fmt.Errorf("cannot resolve user %q in the image: id %d out of range: %w", spec, id, ErrIDRange)
		}
	}
	// HOME comes from here: a home that execve could not take (a NUL
	// byte) is none, as for a user without an entry.
	if strings.ContainsRune(u.Home, 0) {
		u.Home = "/"
	}
	return u, nil
}

// ErrIDRange is the error of a user or group id an image's /etc/passwd
// or /etc/group gives outside 0..2^32-2.
var ErrIDRange = errors.New("user or group id out of range")
