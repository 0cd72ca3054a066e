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

// A stats item is kept while stage0 returns the same *AppStats, and built
// again from the next one.
func TestStatsKeptWhileSameSample(t *testing.T) {
	e := newTestEnv(t)
	e.rt.sharedStats = true
	e.rt.gen = 1 // the List* snapshot is kept too
	pod := e.runPod(t, "web")
	ctr := e.startContainer(t, pod, "run")
	e.rt.mu.Lock()
	e.rt.gen = 2
	cs := &stage0.AppStats{Timestamp: time.Now(), Stats: cgstats.Stats{MemoryWorkingSet: 1 << 20}}
	ps := &stage0.AppStats{Timestamp: time.Now(), Stats: cgstats.Stats{MemoryWorkingSet: 2 << 20}}
	e.rt.stats[appKey(pod, "run-0")], e.rt.stats[pod] = cs, ps
	e.rt.mu.Unlock()
	usage := func() (ctrWS, podWS, podCtrWS uint64) {
		t.Helper()
		l, err := e.rs.ListContainerStats(e.ctx, &runtimeapi.ListContainerStatsRequest{})
		if err != nil || len(l.GetStats()) != 1 || l.GetStats()[0].GetAttributes().GetId() != ctr {
			t.Fatalf("ListContainerStats: %v, %v", l, err)
		}
		p, err := e.rs.ListPodSandboxStats(e.ctx, &runtimeapi.ListPodSandboxStatsRequest{})
		if err != nil || len(p.GetStats()) != 1 || p.GetStats()[0].GetAttributes().GetId() != pod {
			t.Fatalf("ListPodSandboxStats: %v, %v", p, err)
		}
		lx := p.GetStats()[0].GetLinux()
		if len(lx.GetContainers()) != 1 {
			t.Fatalf("ListPodSandboxStats containers: %v", lx)
		}
		return l.GetStats()[0].GetMemory().GetWorkingSetBytes().GetValue(), lx.GetMemory().GetWorkingSetBytes().GetValue(),
			lx.GetContainers()[0].GetMemory().GetWorkingSetBytes().GetValue()
	}
	if c, p, pc := usage(); c != 1<<20 || p != 2<<20 || pc != 1<<20 {
		t.Fatalf("working sets %d %d %d", c, p, pc)
	}
	// stage0 never changes stats it returned; this one does to show the
	// items are kept while the sample is the same
	e.rt.mu.Lock()
	cs.MemoryWorkingSet, ps.MemoryWorkingSet = 3<<20, 4<<20
	e.rt.mu.Unlock()
	if c, p, pc := usage(); c != 1<<20 || p != 2<<20 || pc != 1<<20 {
		t.Errorf("same samples: working sets %d %d %d, want the kept 1, 2, 1 MiB", c, p, pc)
	}
	// a new sample of the container: its item and its pod's are built again
	e.rt.mu.Lock()
	e.rt.stats[appKey(pod, "run-0")] = &stage0.AppStats{Timestamp: time.Now(), Stats: cgstats.Stats{MemoryWorkingSet: 5 << 20}}
	e.rt.mu.Unlock()
	if c, p, pc := usage(); c != 5<<20 || p != 4<<20 || pc != 5<<20 {
		t.Errorf("new container sample: working sets %d %d %d, want 5, 4, 5 MiB", c, p, pc)
	}
}
