package kubeletsvc

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/schema"
)

// StartContainer starts a created container.
func (c *criService) StartContainer(ctx context.Context, r *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	ct, err := c.getContainer(ctx, r.GetContainerId())
	if err != nil {
		return nil, err
	}
	if ct.app.State != schema.AppCreated {
		return nil, fmt.Errorf("%w: container %s is %s, not created", errFailedPrecondition, ct.id, ct.app.State)
	}
	if err := c.rt.StartApp(ctx, ct.sb.ID(), ct.app.App.Name); err != nil {
		return nil, fmt.Errorf("cannot start container %s: %w", ct.id, err)
	}
	if c.events.subscribers() > 0 { // reading the container back reloads its pod
		if now, err := c.getContainer(ctx, ct.id); err == nil {
			c.emit(now, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
		}
	}
	return &runtimeapi.StartContainerResponse{}, nil
}
