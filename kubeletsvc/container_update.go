package kubeletsvc

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/schema"
)

// UpdateContainerResources changes the cgroup limits of a running
// container.
func (c *criService) UpdateContainerResources(ctx context.Context, r *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	res := r.GetLinux()
	if res != nil {
		if err := checkResources("linux", res); err != nil {
			return nil, err
		}
	}
	ct, err := c.getContainer(ctx, r.GetContainerId())
	if err != nil {
		return nil, err
	}
	if res == nil {
		return &runtimeapi.UpdateContainerResourcesResponse{}, nil
	}
	if ct.app.State != schema.AppRunning {
		return nil, fmt.Errorf("%w: container %s is %s, not running", errFailedPrecondition, ct.id, ct.app.State)
	}
	if err := c.rt.UpdateAppResources(ctx, ct.sb.ID(), ct.app.App.Name, linuxResources(res)); err != nil {
		return nil, fmt.Errorf("cannot update the resources of container %s: %w", ct.id, err)
	}
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// ReopenContainerLog makes stage1 reopen a running container's log file
// (the kubelet rotated it).
func (c *criService) ReopenContainerLog(ctx context.Context, r *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	ct, err := c.getContainer(ctx, r.GetContainerId())
	if err != nil {
		return nil, err
	}
	if ct.app.State != schema.AppRunning {
		return nil, fmt.Errorf("%w: container %s is not running", errFailedPrecondition, ct.id)
	}
	if err := c.rt.ReopenAppLog(ctx, ct.sb.ID(), ct.app.App.Name); err != nil {
		return nil, fmt.Errorf("cannot reopen the log of container %s: %w", ct.id, err)
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

// UpdatePodSandboxResources records nothing: api.proto says it "is called
// _after_ the Kubelet reconfigures the pod-level cgroups" and "is treated as
// best effort"; rkt keeps no pod-level resource state beyond the cgroups
// the kubelet already changed. The sandbox must exist.
func (c *criService) UpdatePodSandboxResources(ctx context.Context, r *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	if _, err := c.getSandbox(ctx, r.GetPodSandboxId()); err != nil {
		return nil, err
	}
	return &runtimeapi.UpdatePodSandboxResourcesResponse{}, nil
}
