package kubeletsvc

import (
	"context"
	"fmt"
	"maps"
	"slices"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage0"
)

// CheckpointPod writes a checkpoint of running containers of a running
// sandbox into output_path (stage0.CheckpointPod: all paused before the
// first dump, all resumed before the answer). No option is supported.
func (c *criService) CheckpointPod(ctx context.Context, r *runtimeapi.CheckpointPodRequest) (*runtimeapi.CheckpointPodResponse, error) {
	if len(r.GetOptions()) > 0 {
		return nil, invalidf("checkpoint options %q: rkt supports none", slices.Sorted(maps.Keys(r.GetOptions())))
	}
	if r.GetOutputPath() == "" {
		return nil, invalidf("no output path given")
	}
	ids := r.GetContainerIds()
	if len(ids) == 0 {
		return nil, invalidf("no container IDs given: a pod checkpoint needs at least one")
	}
	s, err := c.getSandbox(ctx, r.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	if !s.ready() {
		return nil, fmt.Errorf("%w: pod sandbox %s is not running", errFailedPrecondition, s.ID())
	}
	seen := map[string]bool{}
	apps := make([]string, 0, len(ids))
	for _, id := range ids {
		ct, err := c.getContainer(ctx, id)
		if err != nil {
			return nil, err
		}
		if seen[ct.id] {
			return nil, invalidf("container %s is given twice", ct.id)
		}
		seen[ct.id] = true
		if ct.sb.ID() != s.ID() {
			return nil, invalidf("container %s is in pod sandbox %s, not in %s", ct.id, ct.sb.ID(), s.ID())
		}
		if ct.app.State != schema.AppRunning {
			return nil, fmt.Errorf("%w: container %s is %s, not running", errFailedPrecondition, ct.id, ct.app.State)
		}
		apps = append(apps, ct.app.App.Name)
	}
	if err := c.rt.CheckpointPod(ctx, s.ID(), stage0.CheckpointOptions{Dir: r.GetOutputPath(), Apps: apps}); err != nil {
		return nil, fmt.Errorf("cannot checkpoint pod sandbox %s: %w", s.ID(), err)
	}
	return &runtimeapi.CheckpointPodResponse{}, nil
}
