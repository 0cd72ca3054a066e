package kubeletsvc

import (
	"context"
	"errors"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage0"
)

// StopContainer stops a running container: SIGTERM, then SIGKILL after
// the timeout (0: at once). api.proto: "This call is idempotent, and must
// not return an error if the container has already been stopped", and
// containerd and CRI-O also succeed for a container that does not exist.
func (c *criService) StopContainer(ctx context.Context, r *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	ct, err := c.getContainer(ctx, r.GetContainerId())
	if err != nil {
		if isNotFound(err) {
			return &runtimeapi.StopContainerResponse{}, nil
		}
		return nil, err
	}
	if ct.app.State != schema.AppRunning {
		return &runtimeapi.StopContainerResponse{}, nil
	}
	opts := stage0.StopOptions{Timeout: seconds(r.GetTimeout())}
	if opts.Timeout <= 0 {
		opts.Force = true // SIGKILL at once (stage0 reads a zero timeout as its default)
	}
	if err := c.rt.StopApp(ctx, ct.sb.ID(), ct.app.App.Name, opts); err != nil &&
		!isNotFound(err) && !errors.Is(err, stage0.ErrNotRunning) {
		return nil, fmt.Errorf("cannot stop container %s: %w", ct.id, err)
	}
	if now, err := c.getContainer(ctx, ct.id); err == nil {
		c.emit(now, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	}
	return &runtimeapi.StopContainerResponse{}, nil
}
