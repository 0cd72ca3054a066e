package stage0

import (
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/appuser"
)

// resolveUser turns a user spec (uid, name, uid:gid, name:group) and an
// optional group override into numeric ids using the app's /etc/passwd and
// /etc/group; it returns the user and its home directory.
func resolveUser(rootfs, userSpec, group string, extra []uint32, strict bool) (specs.User, string, error) {
	name := userSpec
	if group != "" {
		name, _, _ = strings.Cut(userSpec, ":")
		if name == "" {
			name = "0"
		}
		userSpec = name + ":" + group
	}
	eu, err := appuser.Lookup(rootfs, userSpec)
	if err != nil {
		return specs.User{}, "", err
	}
	// An explicit group gives no supplementary groups in the lookup (Docker's
	// "user:group"); the CRI's run_as_group under the Merge policy keeps
	// those the image gives the user, as containerd (WithAdditionalGIDs of
	// the user alone) and CRI-O (GetUserInfo of the user alone) keep them.
	sgids := eu.Sgids
	if group != "" && !strict {
		byName, err := appuser.Lookup(rootfs, name)
		if err != nil {
			return specs.User{}, "", err
		}
		sgids = byName.Sgids
	}
	// The primary group comes first in the process's group list, as
	// containerd and CRI-O set it: `id -G` in the container shows it, and
	// setgroups never leaves a group list without it.
	u := specs.User{UID: uint32(eu.Uid), GID: uint32(eu.Gid), AdditionalGids: []uint32{uint32(eu.Gid)}}
	seen := map[uint32]bool{u.GID: true}
	add := func(g uint32) {
		if !seen[g] {
			seen[g] = true
			u.AdditionalGids = append(u.AdditionalGids, g)
		}
	}
	if !strict {
		for _, g := range sgids {
			add(uint32(g))
		}
	}
	for _, g := range extra {
		add(g)
	}
	return u, eu.Home, nil
}

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
