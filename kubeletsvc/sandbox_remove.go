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
			// removed outside the CRI (rkt rm, rkt gc): what the service
			// kept of it goes now
			if _, creating := c.creating.Load(r.GetPodSandboxId()); !creating && c.sandboxGone(ctx, r.GetPodSandboxId()) {
				c.forgetIDs(r.GetPodSandboxId())
			}
			return &runtimeapi.RemovePodSandboxResponse{}, nil
		}
		return nil, err
	}
	ctrs := s.containers()
	if err := c.rt.Remove(ctx, s.ID(), true); err != nil && !isNotFound(err) {
		return nil, fmt.Errorf("cannot remove pod sandbox %s: %w", s.ID(), err)
	}
	// by ID, not by ctrs: an app whose config does not decode, or one a
	// CreateContainer added meanwhile, holds a name and samples too
	c.forgetIDs(s.ID())
	for _, ct := range ctrs {
		c.emit(ct, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	}
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}
