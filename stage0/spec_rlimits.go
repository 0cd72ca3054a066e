package stage0

import (
	"fmt"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// defaultNofile is the default RLIMIT_NOFILE of apps (soft and hard), like
// containerd's; it is clamped to the caller's hard limit.
const defaultNofile = 1024

var rlimitNames = map[string]int{
	"RLIMIT_AS": unix.RLIMIT_AS, "RLIMIT_CORE": unix.RLIMIT_CORE, "RLIMIT_CPU": unix.RLIMIT_CPU,
	"RLIMIT_DATA": unix.RLIMIT_DATA, "RLIMIT_FSIZE": unix.RLIMIT_FSIZE, "RLIMIT_LOCKS": unix.RLIMIT_LOCKS,
	"RLIMIT_MEMLOCK": unix.RLIMIT_MEMLOCK, "RLIMIT_MSGQUEUE": unix.RLIMIT_MSGQUEUE, "RLIMIT_NICE": unix.RLIMIT_NICE,
	"RLIMIT_NOFILE": unix.RLIMIT_NOFILE, "RLIMIT_NPROC": unix.RLIMIT_NPROC, "RLIMIT_RSS": unix.RLIMIT_RSS,
	"RLIMIT_RTPRIO": unix.RLIMIT_RTPRIO, "RLIMIT_RTTIME": unix.RLIMIT_RTTIME, "RLIMIT_SIGPENDING": unix.RLIMIT_SIGPENDING,
	"RLIMIT_STACK": unix.RLIMIT_STACK,
}

// rlimits returns the app's rlimits (defaults when none are given), each
// clamped to the calling process's hard limit: without CAP_SYS_RESOURCE
// nobody may raise a hard limit, and asking for it would fail the start.
func rlimits(req []specs.POSIXRlimit) ([]specs.POSIXRlimit, error) {
	if req == nil {
		req = []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: defaultNofile, Hard: defaultNofile}}
	}
	out := make([]specs.POSIXRlimit, 0, len(req))
	for _, rl := range req {
		t := strings.ToUpper(rl.Type)
		if !strings.HasPrefix(t, "RLIMIT_") {
			t = "RLIMIT_" + t
		}
		res, ok := rlimitNames[t]
		if !ok {
			return nil, fmt.Errorf("unknown rlimit %q: %w", rl.Type, ErrInvalid)
		}
		if rl.Soft > rl.Hard {
			return nil, fmt.Errorf("rlimit %s: soft limit %d above hard limit %d: %w", t, rl.Soft, rl.Hard, ErrInvalid)
		}
		var cur unix.Rlimit
		if err := unix.Getrlimit(res, &cur); err == nil {
			rl.Hard = min(rl.Hard, cur.Max)
			rl.Soft = min(rl.Soft, rl.Hard)
		}
		rl.Type = t
		out = append(out, rl)
	}
	return out, nil
}
