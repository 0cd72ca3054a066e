package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
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
		debugf("clamping oom_score_adj %d to %d (no CAP_SYS_RESOURCE)", v, l.oomScoreAdj)
		return l.oomScoreAdj
	}
	return v
}

var rlimitNames = map[string]int{
	"RLIMIT_AS": unix.RLIMIT_AS, "RLIMIT_CORE": unix.RLIMIT_CORE, "RLIMIT_CPU": unix.RLIMIT_CPU,
	"RLIMIT_DATA": unix.RLIMIT_DATA, "RLIMIT_FSIZE": unix.RLIMIT_FSIZE, "RLIMIT_LOCKS": unix.RLIMIT_LOCKS,
	"RLIMIT_MEMLOCK": unix.RLIMIT_MEMLOCK, "RLIMIT_MSGQUEUE": unix.RLIMIT_MSGQUEUE, "RLIMIT_NICE": unix.RLIMIT_NICE,
	"RLIMIT_NOFILE": unix.RLIMIT_NOFILE, "RLIMIT_NPROC": unix.RLIMIT_NPROC, "RLIMIT_RSS": unix.RLIMIT_RSS,
	"RLIMIT_RTPRIO": unix.RLIMIT_RTPRIO, "RLIMIT_RTTIME": unix.RLIMIT_RTTIME, "RLIMIT_SIGPENDING": unix.RLIMIT_SIGPENDING,
	"RLIMIT_STACK": unix.RLIMIT_STACK,
}

func (l limits) clampRlimit(r *specs.POSIXRlimit) {
	if l.sysResource {
		return
	}
	res, ok := rlimitNames[r.Type]
	if !ok {
		return
	}
	var cur unix.Rlimit
	if err := unix.Getrlimit(res, &cur); err != nil {
		return
	}
	if r.Hard > cur.Max {
		debugf("clamping %s hard limit %d to %d (no CAP_SYS_RESOURCE)", r.Type, r.Hard, cur.Max)
		r.Hard = cur.Max
	}
	if r.Soft > r.Hard {
		r.Soft = r.Hard
	}
}

// String is for debug logs.
func (l limits) String() string {
	return fmt.Sprintf("sysResource=%v oomScoreAdj=%d", l.sysResource, l.oomScoreAdj)
}
