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

// CheckpointContainer writes a checkpoint of a running container as a tar
// archive at location (stage0.CheckpointApp: the container archive layout
// of CRI-O and containerd, which checkpointctl reads; extracted, RestorePod
// restores it). A timeout > 0 bounds the call, in seconds.
func (c *criService) CheckpointContainer(ctx context.Context, r *runtimeapi.CheckpointContainerRequest) (*runtimeapi.CheckpointContainerResponse, error) {
	if r.GetLocation() == "" {
		return nil, invalidf("no checkpoint archive location given")
	}
	if r.GetTimeout() < 0 {
		return nil, invalidf("negative timeout %d", r.GetTimeout())
	}
	ct, err := c.getContainer(ctx, r.GetContainerId())
	if err != nil {
		return nil, err
	}
	if !ct.sb.ready() {
		return nil, fmt.Errorf("%w: pod sandbox %s of container %s is not running", errFailedPrecondition, ct.sb.ID(), ct.id)
	}
	if ct.app.State != schema.AppRunning {
		return nil, fmt.Errorf("%w: container %s is %s, not running", errFailedPrecondition, ct.id, ct.app.State)
	}
	if t := r.GetTimeout(); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, seconds(t))
		defer cancel()
	}
	if err := c.rt.CheckpointApp(ctx, ct.sb.ID(), ct.app.App.Name, containerArchive(ct, r.GetLocation())); err != nil {
		return nil, fmt.Errorf("cannot checkpoint container %s: %w", ct.id, err)
	}
	return &runtimeapi.CheckpointContainerResponse{}, nil
}

// containerArchive says what a container checkpoint's config.dump and
// spec.dump tell of the container: its CRI metadata under containerd's
// annotation keys, which checkpointctl reads from archives of runtimes it
// does not know.
func containerArchive(ct *container, path string) stage0.ContainerArchive {
	md, smd := ct.cfg.GetMetadata(), ct.sb.cfg.GetMetadata()
	return stage0.ContainerArchive{
		Path: path,
		Dump: stage0.ContainerDump{
			ID:              ct.id,
			Name:            md.GetName(),
			RootfsImageName: ct.cfg.GetImage().GetImage(),
			RootfsImageRef:  ct.app.App.Image.ID,
			CreatedTime:     ct.app.App.CreatedAt,
		},
		Annotations: map[string]string{
			"io.kubernetes.cri.container-type":    "container",
			"io.kubernetes.cri.container-name":    md.GetName(),
			"io.kubernetes.cri.image-name":        ct.cfg.GetImage().GetImage(),
			"io.kubernetes.cri.sandbox-id":        ct.sb.ID(),
			"io.kubernetes.cri.sandbox-name":      smd.GetName(),
			"io.kubernetes.cri.sandbox-namespace": smd.GetNamespace(),
			"io.kubernetes.cri.sandbox-uid":       smd.GetUid(),
		},
	}
}
