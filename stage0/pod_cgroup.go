package stage0

import (
	"fmt"
	"maps"
	"path/filepath"

	sdutil "github.com/coreos/go-systemd/v22/util"
	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs"
	"github.com/opencontainers/cgroups/fs2"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/schema"
)

// SystemdRunning reports whether systemd is PID 1 (sd_booted, as go-systemd
// checks it): stage1 then puts apps in systemd scopes and the pods' cgroup
// driver is systemd's.
func SystemdRunning() bool { return sdutil.IsRunningSystemd() }

// applyPodResources creates the pod cgroup <parent>/<uuid> with the pod's
// limits, so that they bound all its apps together. With systemd the
// cgroup parent (a slice, e.g. the kubelet's pod slice) carries the pod's
// limits and nothing is done here. stage1 gc removes the cgroup.
func (r *Runtime) applyPodResources(pm *schema.PodManifest) error {
	if pm.Resources == nil {
		return nil
	}
	if SystemdRunning() {
		r.log.Debug("systemd cgroups: pod limits are left to the cgroup parent", "pod", pm.UUID, "cgroupParent", pm.CgroupParent)
		return nil
	}
	cg := &cgroups.Cgroup{
		Path:      filepath.Join("/", pm.CgroupParent, pm.UUID),
		Resources: cgroupResources(r.withoutMissingHugetlb(pm.Resources)),
	}
	var (
		mgr cgroups.Manager
		err error
	)
	if cgroups.IsCgroup2UnifiedMode() {
		mgr, err = fs2.NewManager(cg, "")
	} else {
		mgr, err = fs.NewManager(cg, nil)
	}
	if err != nil {
		return fmt.Errorf("cannot create the cgroup of pod %s: %w", pm.UUID, err)
	}
	if err := mgr.Apply(-1); err != nil {
		return fmt.Errorf("cannot create the cgroup of pod %s: %w", pm.UUID, err)
	}
	if err := mgr.Set(cg.Resources); err != nil {
		return fmt.Errorf("cannot set the limits of pod %s: %w", pm.UUID, err)
	}
	return nil
}

// cgroupResources converts the pod's runtime-spec limits as runc's
// specconv.CreateCgroupConfig does, devices aside (the pod cgroup leaves
// them to its apps). specconv itself is not used here: it links
// libcontainer's seccomp (cgo, libseccomp) and the systemd driver (dbus)
// into every rkt process, the kubelet-service included.
func cgroupResources(r *specs.LinuxResources) *cgroups.Resources {
	c := &cgroups.Resources{SkipDevices: true}
	if m := r.Memory; m != nil {
		if m.Limit != nil {
			c.Memory = *m.Limit
		}
		if m.Reservation != nil {
			c.MemoryReservation = *m.Reservation
		}
		if m.Swap != nil {
			c.MemorySwap = *m.Swap
		}
		c.MemorySwappiness = m.Swappiness
		if m.DisableOOMKiller != nil {
			c.OomKillDisable = *m.DisableOOMKiller
		}
		if m.CheckBeforeUpdate != nil {
			c.MemoryCheckBeforeUpdate = *m.CheckBeforeUpdate
		}
	}
	if p := r.CPU; p != nil {
		if p.Shares != nil {
			c.CpuShares = *p.Shares
			c.CpuWeight = cgroups.ConvertCPUSharesToCgroupV2Value(c.CpuShares)
		}
		if p.Quota != nil {
			c.CpuQuota = *p.Quota
		}
		c.CpuBurst = p.Burst
		if p.Period != nil {
			c.CpuPeriod = *p.Period
		}
		if p.RealtimeRuntime != nil {
			c.CpuRtRuntime = *p.RealtimeRuntime
		}
		if p.RealtimePeriod != nil {
			c.CpuRtPeriod = *p.RealtimePeriod
		}
		c.CpusetCpus, c.CpusetMems, c.CPUIdle = p.Cpus, p.Mems, p.Idle
	}
	if r.Pids != nil {
		c.PidsLimit = r.Pids.Limit
	}
	if b := r.BlockIO; b != nil {
		if b.Weight != nil {
			c.BlkioWeight = *b.Weight
		}
		if b.LeafWeight != nil {
			c.BlkioLeafWeight = *b.LeafWeight
		}
		for _, wd := range b.WeightDevice {
			var w, lw uint16
			if wd.Weight != nil {
				w = *wd.Weight
			}
			if wd.LeafWeight != nil {
				lw = *wd.LeafWeight
			}
			c.BlkioWeightDevice = append(c.BlkioWeightDevice, cgroups.NewWeightDevice(wd.Major, wd.Minor, w, lw))
		}
		throttle := func(ds []specs.LinuxThrottleDevice) []*cgroups.ThrottleDevice {
			var out []*cgroups.ThrottleDevice
			for _, d := range ds {
				out = append(out, cgroups.NewThrottleDevice(d.Major, d.Minor, d.Rate))
			}
			return out
		}
		c.BlkioThrottleReadBpsDevice = throttle(b.ThrottleReadBpsDevice)
		c.BlkioThrottleWriteBpsDevice = throttle(b.ThrottleWriteBpsDevice)
		c.BlkioThrottleReadIOPSDevice = throttle(b.ThrottleReadIOPSDevice)
		c.BlkioThrottleWriteIOPSDevice = throttle(b.ThrottleWriteIOPSDevice)
	}
	for _, l := range r.HugepageLimits {
		c.HugetlbLimit = append(c.HugetlbLimit, &cgroups.HugepageLimit{Pagesize: l.Pagesize, Limit: l.Limit})
	}
	if len(r.Rdma) > 0 {
		c.Rdma = make(map[string]cgroups.LinuxRdma, len(r.Rdma))
		for k, v := range r.Rdma {
			c.Rdma[k] = cgroups.LinuxRdma{HcaHandles: v.HcaHandles, HcaObjects: v.HcaObjects}
		}
	}
	if n := r.Network; n != nil {
		if n.ClassID != nil {
			c.NetClsClassid = *n.ClassID
		}
		for _, p := range n.Priorities {
			c.NetPrioIfpriomap = append(c.NetPrioIfpriomap, &cgroups.IfPrioMap{Interface: p.Name, Priority: int64(p.Priority)})
		}
	}
	c.Unified = maps.Clone(r.Unified)
	return c
}
