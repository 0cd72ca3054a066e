package kubeletsvc

import (
	"context"
	"errors"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage0"
)

// StopPodSandbox stops a sandbox's containers and supervisor and releases
// its network. api.proto: "If there are any running containers in the
// sandbox, they must be forcibly terminated. [...] This call is idempotent,
// and must not return an error if all relevant resources have already been
// reclaimed", so a sandbox that does not exist (any more) is stopped.
func (c *criService) StopPodSandbox(ctx context.Context, r *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	s, err := c.getSandbox(ctx, r.GetPodSandboxId())
	if err != nil {
		if isNotFound(err) {
			return &runtimeapi.StopPodSandboxResponse{}, nil
		}
		return nil, err
	}
	ctrs := s.containers()
	if err := c.rt.Stop(ctx, s.ID(), stage0.StopOptions{}); err != nil && !errors.Is(err, stage0.ErrNotRunning) {
		return nil, fmt.Errorf("cannot stop pod sandbox %s: %w", s.ID(), err)
	}
	for _, ct := range ctrs {
		if ct.app.State == schema.AppRunning {
			c.emit(ct, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
		}
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// isNotFound reports whether err says a pod, app, container or image does
// not exist.
func isNotFound(err error) bool {
	return errors.Is(err, errNotFound) || errors.Is(err, stage0.ErrPodNotFound) || errors.Is(err, stage0.ErrAppNotFound)
}
