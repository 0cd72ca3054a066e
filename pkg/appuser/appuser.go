// Package appuser resolves the user an app runs as from the app's own
// /etc/passwd and /etc/group. stage0 uses it to build an app's spec and
// stage1 for the user of an exec, so both read the image the same way.
package appuser

import (
	"errors"
	"fmt"
	"io"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/moby/sys/user"

	"github.com/rkt/rkt/pkg/fileperm"
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
		if f.path == "" {
			continue
		}
		file, err := fileperm.OpenRegular(f.path)
		switch {
		case errors.Is(err, fileperm.ErrNotRegular):
			return nil, err
		case err != nil:
			continue // missing or unreadable: none, as user.GetExecUserPath takes it
		}
		defer file.Close()
		*f.r = file
	}
	u, err := user.GetExecUser(spec, &user.ExecUser{Uid: 0, Gid: 0, Home: "/"}, passwdR, groupR)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve user %q in the image: %w", spec, err)
	}
	return u, nil
}
