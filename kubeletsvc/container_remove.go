package kubeletsvc

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RemoveContainer removes a container, stopping it first if it runs.
// api.proto: "This call is idempotent, and must not return an error if the
// container has already been removed."
func (c *criService) RemoveContainer(ctx context.Context, r *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	ct, err := c.getContainer(ctx, r.GetContainerId())
	if err != nil {
		if isNotFound(err) {
			// removed outside the CRI (rkt app rm, rkt rm): what the
			// service kept of it goes now
			if _, ok := podOfContainerID(r.GetContainerId()); ok {
				if _, creating := c.creating.Load(r.GetContainerId()); !creating {
					c.forgetIDs(r.GetContainerId())
				}
			}
			return &runtimeapi.RemoveContainerResponse{}, nil
		}
		return nil, err
	}
	if err := c.rt.RemoveApp(ctx, ct.sb.ID(), ct.app.App.Name); err != nil && !isNotFound(err) {
		return nil, fmt.Errorf("cannot remove container %s: %w", ct.id, err)
	}
	c.forgetIDs(ct.id)
	c.emit(ct, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	return &runtimeapi.RemoveContainerResponse{}, nil
}
