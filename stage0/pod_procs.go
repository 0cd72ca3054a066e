package stage0

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rkt/rkt/pkg/proc"
)

// podProcesses lists the pids whose cgroup path contains the pod's cgroup
// (<parent>/<uuid>/), zombies included.
func podProcesses(cgroupParent, uuid string) []int {
	needle := filepath.Join("/", cgroupParent, uuid) + "/"
	all, err := proc.PIDs()
	if err != nil {
		return nil
	}
	var pids []int
	for _, pid := range all {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
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
