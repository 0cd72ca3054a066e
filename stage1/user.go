package main

import (
	"fmt"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/moby/sys/user"
)

// resolveUser resolves "name|uid[:group|gid]" against the app's /etc/passwd
// and /etc/group, resolved inside rootfs so symlinks cannot escape it.
func resolveUser(rootfs, spec string) (*user.ExecUser, error) {
	passwd, err := securejoin.SecureJoin(rootfs, "/etc/passwd")
	if err != nil {
		return nil, fmt.Errorf("cannot resolve /etc/passwd in %q: %w", rootfs, err)
	}
	group, err := securejoin.SecureJoin(rootfs, "/etc/group")
	if err != nil {
		return nil, fmt.Errorf("cannot resolve /etc/group in %q: %w", rootfs, err)
	}
	u, err := user.GetExecUserPath(spec, &user.ExecUser{Home: "/"}, passwd, group)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve user %q: %w", spec, err)
	}
	return u, nil
}
