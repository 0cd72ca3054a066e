package stage0

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/rlimit"
)

// rlimits returns the app's rlimits, each clamped to the calling process's
// hard limit: without CAP_SYS_RESOURCE nobody may raise a hard limit, and
// asking for it would fail the start. None asked: none set, and the app
// keeps those of its supervisor, the caller's (the service's unit sets
// LimitNOFILE, as containerd's and CRI-O's do; their CRI containers
// inherit the daemon's limits too).
func rlimits(req []specs.POSIXRlimit) ([]specs.POSIXRlimit, error) {
	if req == nil {
		return nil, nil
	}
	out := make([]specs.POSIXRlimit, 0, len(req))
	for _, rl := range req {
		t, ok := rlimit.Canonical(rl.Type)
		if !ok {
			return nil, fmt.Errorf("unknown rlimit %q: %w", rl.Type, ErrInvalid)
		}
		if rl.Soft > rl.Hard {
			return nil, fmt.Errorf("rlimit %s: soft limit %d above hard limit %d: %w", t, rl.Soft, rl.Hard, ErrInvalid)
		}
		rl.Type = t
		rlimit.Clamp(&rl)
		out = append(out, rl)
	}
	return out, nil
}
