package stage0

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/moby/sys/user"
	specs "github.com/opencontainers/runtime-spec/specs-go"
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
	passwd, err := rootfsFile(rootfs, "/etc/passwd")
	if err != nil {
		return specs.User{}, "", err
	}
	groupPath, err := rootfsFile(rootfs, "/etc/group")
	if err != nil {
		return specs.User{}, "", err
	}
	defaults := &user.ExecUser{Uid: 0, Gid: 0, Home: "/"}
	eu, err := user.GetExecUserPath(userSpec, defaults, passwd, groupPath)
	if err != nil {
		return specs.User{}, "", fmt.Errorf("cannot resolve user %q in the image: %w", userSpec, err)
	}
	u := specs.User{UID: uint32(eu.Uid), GID: uint32(eu.Gid)}
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
	if u.AdditionalGids == nil {
		// make sure the primary group is the only one (no host groups leak)
		u.AdditionalGids = []uint32{}
	}
	return u, eu.Home, nil
}

// rootfsFile resolves path inside rootfs without following symlinks out of
// it; a missing file gives "" (the user library then uses defaults for
// numeric ids).
func rootfsFile(rootfs, path string) (string, error) {
	if rootfs == "" {
		return "", nil
	}
	p, err := securejoin.SecureJoin(rootfs, path)
	if err != nil {
		return "", fmt.Errorf("cannot resolve %s in the app's rootfs: %w", path, err)
	}
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return p, nil
}

// mergeEnv returns base with every KEY=VALUE of over replacing or appended.
func mergeEnv(base, over []string) []string {
	out := append([]string{}, base...)
	idx := map[string]int{}
	for i, kv := range out {
		k, _, _ := strings.Cut(kv, "=")
		idx[k] = i
	}
	for _, kv := range over {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}

func hasEnv(env []string, key string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			return true
		}
	}
	return false
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
