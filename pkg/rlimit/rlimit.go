// Package rlimit names POSIX resource limits and clamps requested limits to
// what the calling process may set: without CAP_SYS_RESOURCE nobody may
// raise a hard limit, and asking for it would fail an app's start.
package rlimit

import (
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

var resources = map[string]int{
	"RLIMIT_AS": unix.RLIMIT_AS, "RLIMIT_CORE": unix.RLIMIT_CORE, "RLIMIT_CPU": unix.RLIMIT_CPU,
	"RLIMIT_DATA": unix.RLIMIT_DATA, "RLIMIT_FSIZE": unix.RLIMIT_FSIZE, "RLIMIT_LOCKS": unix.RLIMIT_LOCKS,
	"RLIMIT_MEMLOCK": unix.RLIMIT_MEMLOCK, "RLIMIT_MSGQUEUE": unix.RLIMIT_MSGQUEUE, "RLIMIT_NICE": unix.RLIMIT_NICE,
	"RLIMIT_NOFILE": unix.RLIMIT_NOFILE, "RLIMIT_NPROC": unix.RLIMIT_NPROC, "RLIMIT_RSS": unix.RLIMIT_RSS,
	"RLIMIT_RTPRIO": unix.RLIMIT_RTPRIO, "RLIMIT_RTTIME": unix.RLIMIT_RTTIME, "RLIMIT_SIGPENDING": unix.RLIMIT_SIGPENDING,
	"RLIMIT_STACK": unix.RLIMIT_STACK,
}

// Canonical returns the OCI name of a limit ("nofile", "NOFILE" and
// "RLIMIT_NOFILE" all give "RLIMIT_NOFILE") and whether it is known.
func Canonical(name string) (string, bool) {
	t := strings.ToUpper(name)
	if !strings.HasPrefix(t, "RLIMIT_") {
		t = "RLIMIT_" + t
	}
	_, ok := resources[t]
	return t, ok
}

// Resource returns the resource number of a limit named as Canonical
// accepts, and whether it is known.
func Resource(name string) (int, bool) {
	t, ok := Canonical(name)
	if !ok {
		return 0, false
	}
	return resources[t], true
}

// Clamp lowers r's hard limit to this process's hard limit of the same
// resource, and its soft limit to its hard limit. It reports whether r
// changed; an unknown or unreadable limit is left as it is.
func Clamp(r *specs.POSIXRlimit) bool {
	t, ok := Canonical(r.Type)
	if !ok {
		return false
	}
	var cur unix.Rlimit
	if err := unix.Getrlimit(resources[t], &cur); err != nil {
		return false
	}
	hard, soft := min(r.Hard, cur.Max), min(r.Soft, r.Hard, cur.Max)
	changed := hard != r.Hard || soft != r.Soft
	r.Hard, r.Soft = hard, soft
	return changed
}
