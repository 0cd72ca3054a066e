package stage0

import (
	"fmt"
	"path/filepath"

	sdutil "github.com/coreos/go-systemd/v22/util"
	"github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/runc/libcontainer/specconv"
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
	res := *r.withoutMissingHugetlb(pm.Resources)
	res.Devices = nil
	spec := &specs.Spec{Linux: &specs.Linux{CgroupsPath: filepath.Join("/", pm.CgroupParent, pm.UUID), Resources: &res}}
	cg, err := specconv.CreateCgroupConfig(&specconv.CreateOpts{CgroupName: pm.UUID, Spec: spec}, nil)
	if err != nil {
		return fmt.Errorf("invalid resources of pod %s: %w", pm.UUID, err)
	}
	cg.Resources.SkipDevices = true
	mgr, err := manager.New(cg)
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
