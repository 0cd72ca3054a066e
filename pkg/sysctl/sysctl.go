// Package sysctl classifies and checks the sysctls a pod may set: stage1
// sets them, the CRI service refuses bad ones before anything is created.
package sysctl

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Namespace returns the namespace a sysctl belongs to ("net", "ipc",
// "uts"), or "" when it is not namespaced. key is in dotted form.
func Namespace(key string) string {
	switch {
	case strings.HasPrefix(key, "net."):
		return "net"
	case strings.HasPrefix(key, "fs.mqueue."),
		key == "kernel.msgmax", key == "kernel.msgmnb", key == "kernel.msgmni", key == "kernel.sem",
		key == "kernel.shmall", key == "kernel.shmmax", key == "kernel.shmmni", key == "kernel.shm_rmid_forced":
		return "ipc"
	case key == "kernel.hostname", key == "kernel.domainname":
		return "uts"
	}
	return ""
}

// Path is the /proc/sys file of a dotted sysctl key.
func Path(key string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
}

// maxKey bounds a key; the longest Linux sysctl name is far shorter.
const maxKey = 256

// Check refuses a sysctl that is malformed (empty components, characters
// other than [A-Za-z0-9_-], a value with NUL or newline) or not namespaced.
// Keys use dots; slashes, as sysctl(8) also accepts, are refused so that a
// key names exactly one file under /proc/sys.
func Check(key, value string) error {
	if key == "" || len(key) > maxKey {
		return fmt.Errorf("sysctl name %q: empty or longer than %d bytes", key, maxKey)
	}
	for _, part := range strings.Split(key, ".") {
		if part == "" {
			return fmt.Errorf("sysctl name %q has an empty component", key)
		}
		for _, r := range part {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
				return fmt.Errorf("sysctl name %q has the invalid character %q", key, r)
			}
		}
	}
	if strings.ContainsAny(value, "\x00\n") {
		return fmt.Errorf("sysctl %q: value has a NUL or newline", key)
	}
	if Namespace(key) == "" {
		return fmt.Errorf("sysctl %q is not namespaced and cannot be set for a pod", key)
	}
	return nil
}
