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
	if group != "" {
		name, _, _ := strings.Cut(userSpec, ":")
		if name == "" {
			name = "0"
		}
		userSpec = name + ":" + group
	}
	eu, err := appuser.Lookup(rootfs, userSpec)
	if err != nil {
		return specs.User{}, "", err
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
		for _, g := range eu.Sgids {
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
