package stage0

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/rlimit"
)

// defaultNofile is the default RLIMIT_NOFILE of apps (soft and hard), like
// containerd's; it is clamped to the caller's hard limit.
const defaultNofile = 1024

// rlimits returns the app's rlimits (defaults when none are given), each
// clamped to the calling process's hard limit: without CAP_SYS_RESOURCE
// nobody may raise a hard limit, and asking for it would fail the start.
func rlimits(req []specs.POSIXRlimit) ([]specs.POSIXRlimit, error) {
	if req == nil {
		req = []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: defaultNofile, Hard: defaultNofile}}
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
