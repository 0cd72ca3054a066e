package kubeletsvc

import (
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/cgstats"
	"github.com/rkt/rkt/stage0"
)

// TestContainerProcessesMetric: container_processes counts processes (the
// cgroup's cgroup.procs, as cAdvisor counts them), not their threads
// (pids.current, which is container_threads' figure in cAdvisor).
func TestContainerProcessesMetric(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	e.startContainer(t, pod, "run")
	// one process with three threads
	e.rt.stats[appKey(pod, "run-0")] = &stage0.AppStats{Timestamp: time.Now(),
		Stats: cgstats.Stats{Pids: []int{7}, Processes: 3, Threads: 3}}
	r, err := e.rs.ListPodSandboxMetrics(e.ctx, &runtimeapi.ListPodSandboxMetricsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, pm := range r.GetPodMetrics() {
		for _, cm := range pm.GetContainerMetrics() {
			for _, m := range cm.GetMetrics() {
				got[m.GetName()] = m.GetValue().GetValue()
			}
		}
	}
	if got["container_processes"] != 1 || got["container_threads"] != 3 {
		t.Errorf("container_processes %d, container_threads %d; want 1 and 3", got["container_processes"], got["container_threads"])
	}
}
