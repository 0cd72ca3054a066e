package main

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/rlimit"
)

// limits records what this process may set for its apps: without
// CAP_SYS_RESOURCE an oom_score_adj below its own and rlimits above its own
// hard limits fail, so they are clamped instead.
type limits struct {
	sysResource bool
	oomScoreAdj int
}

func currentLimits() limits {
	l := limits{sysResource: hasCap(unix.CAP_SYS_RESOURCE)}
	if b, err := os.ReadFile("/proc/self/oom_score_adj"); err == nil {
		l.oomScoreAdj, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	return l
}

// hasCap reports whether capability c is in this process's effective set.
func hasCap(c int) bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<uint(c)) != 0
		}
	}
	return false
}

func (l limits) clampOOMScoreAdj(v int) int {
	if !l.sysResource && v < l.oomScoreAdj {
		slog.Debug("clamping oom_score_adj (no CAP_SYS_RESOURCE)", "asked", v, "set", l.oomScoreAdj)
		return l.oomScoreAdj
	}
	return v
}

func (l limits) clampRlimit(r *specs.POSIXRlimit) {
	if l.sysResource {
		return
	}
	was := *r
	if rlimit.Clamp(r) {
		slog.Debug("clamping an rlimit (no CAP_SYS_RESOURCE)", "type", r.Type, "asked", fmt.Sprintf("%d/%d", was.Soft, was.Hard), "set", fmt.Sprintf("%d/%d", r.Soft, r.Hard))
	}
}

// String is for debug logs.
func (l limits) String() string {
	return fmt.Sprintf("sysResource=%v oomScoreAdj=%d", l.sysResource, l.oomScoreAdj)
}
