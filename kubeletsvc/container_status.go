package kubeletsvc

import (
	"context"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/cgstats"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage0"
)

// ContainerStatus returns a container's status; verbose adds its runtime
// spec and pid under "info".
func (c *criService) ContainerStatus(ctx context.Context, r *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	ct, err := c.getContainer(ctx, r.GetContainerId())
	if err != nil {
		return nil, err
	}
	spec, specErr := c.rt.AppSpec(ct.sb.ID(), ct.app.App.Name)
	var stats *stage0.AppStats
	if specErr == nil && spec.Process != nil && spec.Linux != nil && ct.app.State == schema.AppRunning && ct.app.Pid > 0 {
		// the limits in force, which UpdateContainerResources may have
		// changed since the spec was written
		stats, _ = c.rt.AppStats(ctx, ct.sb.ID(), ct.app.App.Name)
	}
	if !r.GetVerbose() {
		if k := ct.status.Load(); k != nil && k.spec == spec && k.stats == stats {
			return k.resp, nil
		}
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: c.containerStatus(ct)}
	if spec != nil && spec.Process != nil {
		st := resp.Status
		u := spec.Process.User
		// the process's groups: its primary group, then the supplementary ones
		lu := &runtimeapi.LinuxContainerUser{Uid: int64(u.UID), Gid: int64(u.GID), SupplementalGroups: []int64{int64(u.GID)}}
		for _, g := range u.AdditionalGids {
			if g != u.GID {
				lu.SupplementalGroups = append(lu.SupplementalGroups, int64(g))
			}
		}
		st.User = &runtimeapi.ContainerUser{Linux: lu}
		if spec.Linux != nil {
			st.Resources = &runtimeapi.ContainerResources{Linux: criResources(spec.Linux.Resources, spec.Process.OOMScoreAdj)}
			if stats != nil {
				liveResources(st.Resources.Linux, &stats.Stats)
			}
		}
	}
	if !r.GetVerbose() {
		ct.status.Store(&keptStatus{spec: spec, stats: stats, resp: resp})
		return resp, nil
	}
	info := map[string]any{
		"sandboxID": ct.sb.ID(),
		"app":       ct.app.App.Name,
		"pid":       ct.app.Pid,
		"signal":    ct.app.Signal,
		"config":    ct.cfg,
	}
	if specErr == nil {
		info["runtimeSpec"] = spec
	}
	resp.Info = map[string]string{"info": toJSON(info)}
	return resp, nil
}

// keptStatus is a container's ContainerStatus answer (not verbose), kept
// while its sandbox's status (the container itself), its spec and its
// stats (the limits in force) are those it was made from. Shared:
// read-only.
type keptStatus struct {
	spec  *specs.Spec
	stats *stage0.AppStats
	resp  *runtimeapi.ContainerStatusResponse
}

// containerState maps an app's state to the CRI's.
func containerState(a schema.AppState) runtimeapi.ContainerState {
	switch a {
	case schema.AppCreated:
		return runtimeapi.ContainerState_CONTAINER_CREATED
	case schema.AppRunning:
		return runtimeapi.ContainerState_CONTAINER_RUNNING
	case schema.AppExited:
		return runtimeapi.ContainerState_CONTAINER_EXITED
	}
	return runtimeapi.ContainerState_CONTAINER_UNKNOWN
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// containerStatus builds the CRI status of a container from its app's
// manifest entry and recorded status.
func (c *criService) containerStatus(ct *container) *runtimeapi.ContainerStatus {
	a := ct.app
	created := a.CreatedAt
	if created.IsZero() {
		created = a.App.CreatedAt
	}
	imageRef := a.App.Annotations[annoImageRef]
	st := &runtimeapi.ContainerStatus{
		Id:          ct.id,
		Metadata:    ct.cfg.GetMetadata(),
		State:       containerState(a.State),
		CreatedAt:   unixNano(created),
		StartedAt:   unixNano(a.StartedAt),
		FinishedAt:  unixNano(a.FinishedAt),
		Image:       &runtimeapi.ImageSpec{Image: a.App.Annotations[annoImage], UserSpecifiedImage: ct.cfg.GetImage().GetUserSpecifiedImage(), Annotations: ct.cfg.GetImage().GetAnnotations()},
		ImageRef:    imageRef,
		ImageId:     imageRef,
		Labels:      ct.cfg.GetLabels(),
		Annotations: ct.cfg.GetAnnotations(),
		Mounts:      ct.cfg.GetMounts(),
		LogPath:     a.LogPath,
		Message:     a.Message,
		StopSignal:  criStopSignal(a.App.StopSignal), // what stage1 sends before SIGKILL
	}
	if a.State == schema.AppExited {
		st.ExitCode = int32(a.ExitCode)
		switch {
		case a.OOMKilled:
			st.Reason = "OOMKilled"
		case a.ExitCode == 0:
			st.Reason = "Completed"
		default:
			st.Reason = "Error"
		}
		if a.Reason != "" && a.Reason != st.Reason && st.Message == "" {
			st.Message = a.Reason
		}
	}
	return st
}

// unlimited is the smallest value the kernel reports for "no limit".
const unlimited = 1 << 62

// liveResources overwrites the CPU and memory limits of res with those the
// container's cgroups enforce (0 for none, as in CRI).
func liveResources(res *runtimeapi.LinuxContainerResources, cg *cgstats.Stats) {
	if cg.CPUShares > 0 {
		res.CpuShares = int64(cg.CPUShares)
	}
	if cg.CPUPeriodMicros > 0 {
		res.CpuPeriod = int64(cg.CPUPeriodMicros)
	}
	res.CpuQuota = max(cg.CPUQuotaMicros, 0)
	res.MemoryLimitInBytes = limit(cg.MemoryLimit)
	res.MemorySwapLimitInBytes = limit(cg.MemorySwapLimit)
}

func limit(v uint64) int64 {
	if v >= unlimited {
		return 0
	}
	return int64(v)
}
