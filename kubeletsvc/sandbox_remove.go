package kubeletsvc

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RemovePodSandbox removes a sandbox and its containers, stopping them
// first if they run. api.proto: "This call is idempotent, and must not
// return an error if the sandbox has already been removed."
func (c *criService) RemovePodSandbox(ctx context.Context, r *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	s, err := c.getSandbox(ctx, r.GetPodSandboxId())
	if err != nil {
		if isNotFound(err) {
			return &runtimeapi.RemovePodSandboxResponse{}, nil
		}
		return nil, err
	}
	ctrs, _ := s.containers()
	if err := c.rt.Remove(ctx, s.ID(), true); err != nil && !isNotFound(err) {
		return nil, fmt.Errorf("cannot remove pod sandbox %s: %w", s.ID(), err)
	}
	for _, ct := range ctrs {
		c.containerNames.Release(ct.id)
		c.forgetContainer(ct.id)
		c.emit(ct, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	}
	c.sandboxNames.Release(s.ID())
	c.stats.forget(s.ID())
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}
