package kubeletsvc

import (
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/cgstats"
	"github.com/rkt/rkt/stage0"
)

func TestContainerStats(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	running, created := e.startContainer(t, pod, "run"), e.createContainer(t, pod, "new")
	t0 := time.Now()
	e.rt.stats[appKey(pod, "run-0")] = &stage0.AppStats{Timestamp: t0,
		Stats:         cgstats.Stats{CPUUsageNanos: 1e9, MemoryWorkingSet: 10 << 20, MemoryUsage: 12 << 20, MemoryRSS: 8 << 20, MemoryLimit: 64 << 20},
		WritableLayer: stage0.FsUsage{Bytes: 4096, Inodes: 3, Mountpoint: "/var/lib/rkt"}}
	r, err := e.rs.ContainerStats(e.ctx, &runtimeapi.ContainerStatsRequest{ContainerId: running})
	if err != nil {
		t.Fatal(err)
	}
	s := r.GetStats()
	if s.GetAttributes().GetId() != running || s.GetAttributes().GetMetadata().GetName() != "run" || s.GetAttributes().GetLabels()["ctr"] != "run" {
		t.Errorf("attributes %v", s.GetAttributes())
	}
	if s.GetCpu().GetUsageCoreNanoSeconds().GetValue() != 1e9 || s.GetCpu().GetUsageNanoCores().GetValue() != 0 {
		t.Errorf("cpu %v: want 1e9 ns used, no rate from a first sample", s.GetCpu())
	}
	if m := s.GetMemory(); m.GetWorkingSetBytes().GetValue() != 10<<20 || m.GetUsageBytes().GetValue() != 12<<20 ||
		m.GetRssBytes().GetValue() != 8<<20 || m.GetAvailableBytes().GetValue() != 54<<20 {
		t.Errorf("memory %v", m)
	}
	if w := s.GetWritableLayer(); w.GetUsedBytes().GetValue() != 4096 || w.GetInodesUsed().GetValue() != 3 || w.GetFsId().GetMountpoint() != "/var/lib/rkt" {
		t.Errorf("writable layer %v", w)
	}
	// half a core over the next two seconds
	e.rt.stats[appKey(pod, "run-0")].Timestamp = t0.Add(2 * time.Second)
	e.rt.stats[appKey(pod, "run-0")].CPUUsageNanos = 2e9
	r, err = e.rs.ContainerStats(e.ctx, &runtimeapi.ContainerStatsRequest{ContainerId: running})
	if err != nil {
		t.Fatal(err)
	}
	if rate := r.GetStats().GetCpu().GetUsageNanoCores().GetValue(); rate != 5e8 {
		t.Errorf("usage %d nano cores, want 5e8", rate)
	}
	// a container that does not run has attributes and no usage
	r, err = e.rs.ContainerStats(e.ctx, &runtimeapi.ContainerStatsRequest{ContainerId: created})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetStats().GetAttributes().GetId() != created || r.GetStats().GetCpu() != nil || r.GetStats().GetMemory() != nil {
		t.Errorf("stats of a created container: %v", r.GetStats())
	}
	l, err := e.rs.ListContainerStats(e.ctx, &runtimeapi.ListContainerStatsRequest{Filter: &runtimeapi.ContainerStatsFilter{LabelSelector: map[string]string{"ctr": "run"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.GetStats()) != 1 || l.GetStats()[0].GetAttributes().GetId() != running {
		t.Errorf("listed stats %v, want only %s's", l.GetStats(), running)
	}
}
