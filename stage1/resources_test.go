package main

import (
	"os"
	"strconv"
	"testing"

	"github.com/opencontainers/cgroups"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/cgstats"
	"github.com/rkt/rkt/pkg/schema"
)

// TestUpdateResourcesCPUWeight: an update of the CPU shares must change
// the cgroup v2 weight too (fs2 and the systemd v2 driver write cpu.weight
// from CpuWeight and ignore CpuShares), not write the old weight again.
func TestUpdateResourcesCPUWeight(t *testing.T) {
	conv := func(shares uint64) *cgroups.Resources {
		spec := &specs.Spec{
			Root:    &specs.Root{Path: "/nonexistent"},
			Process: &specs.Process{Args: []string{"sh"}, Cwd: "/"},
			Linux: &specs.Linux{CgroupsPath: "/rkt/pod/app",
				Resources: &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: &shares}}},
		}
		cfg, err := libcontainerConfig("app", spec, false)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Cgroups.Resources
	}
	merged := *conv(1024) // the app's as created
	mergeResources(&merged, conv(512))
	want := cgroups.ConvertCPUSharesToCgroupV2Value(512)
	if merged.CpuShares != 512 || merged.CpuWeight != want {
		t.Errorf("after an update to 512 shares: shares %d, weight %d; want 512, %d", merged.CpuShares, merged.CpuWeight, want)
	}
}

// TestUpdateResourcesRefusedHalfway: an update the kernel refuses part of
// fails and leaves the app's limits as they were, also those it had none
// of (libcontainer sets back only the limits its previous configuration
// had values for).
func TestUpdateResourcesRefusedHalfway(t *testing.T) {
	p := newPod(t, func(m *schema.PodManifest) { m.CgroupParent = "/audit-stats-" + strconv.Itoa(os.Getpid()) })
	p.addApp("web", schema.App{}, []string{"sh", "-c", "while true; do sleep 0.05; done"}, nil)
	p.mustStart(modeSandbox)
	c := p.client
	if err := c.StartApp(ctx(t), "web"); err != nil {
		t.Fatal(err)
	}
	pid := p.status("web").Pid
	before, err := cgstats.ReadPid(pid)
	if err != nil {
		t.Fatal(err)
	}
	// memory is set before the CPU quota, which the kernel refuses (below
	// its 1 ms minimum) on cgroup v1 and v2 alike
	limit, quota, period := int64(64<<20), int64(500), uint64(100000)
	err = c.UpdateResources(ctx(t), "web", &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &limit},
		CPU: &specs.LinuxCPU{Quota: &quota, Period: &period}})
	if err == nil {
		t.Fatal("an update with a CPU quota of 0.5 ms succeeded")
	}
	after, err := cgstats.ReadPid(pid)
	if err != nil {
		t.Fatal(err)
	}
	if after.MemoryLimit != before.MemoryLimit {
		t.Errorf("memory limit %d after a refused update, %d before", after.MemoryLimit, before.MemoryLimit)
	}
}
