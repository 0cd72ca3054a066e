package stage0

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// podProcesses lists the pids whose cgroup path contains the pod's cgroup
// (<parent>/<uuid>/), zombies included.
func podProcesses(cgroupParent, uuid string) []int {
	needle := filepath.Join("/", cgroupParent, uuid) + "/"
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cgroup")
		if err != nil {
			continue
		}
		if strings.Contains(string(b), needle) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitPodProcesses waits (bounded) until no process of the pod is left: the
// apps of a supervisor that was killed are orphans that the host's init
// must reap after they died.
func waitPodProcesses(ctx context.Context, cgroupParent, uuid string, timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	for {
		pids := podProcesses(cgroupParent, uuid)
		if len(pids) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
}
