package kubeletsvc

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

// restoreSource is a checkpointed app a container is created from.
type restoreSource struct {
	files   stage0.CheckpointFiles
	imageID string
	want    stage0.CheckpointedApp // the dumped process
}

// RestorePod creates a sandbox from the request's config and, for every
// container of the checkpoint, a container from its config (matched by
// metadata name) in CREATED state, with the checkpointed writable layer:
// its StartContainer restores the dumped process with CRIU. The
// checkpoint must be one of CheckpointPod's; images and processes must be
// the checkpointed ones. On error nothing the call created is left.
func (c *criService) RestorePod(ctx context.Context, r *runtimeapi.RestorePodRequest) (_ *runtimeapi.RestorePodResponse, retErr error) {
	if len(r.GetOptions()) > 0 {
		return nil, invalidf("restore options %q: rkt supports none", slices.Sorted(maps.Keys(r.GetOptions())))
	}
	if err := c.checkRestoreAllowed("pod checkpoint " + r.GetCheckpointPath()); err != nil {
		return nil, err
	}
	path := r.GetCheckpointPath()
	if !filepath.IsAbs(path) {
		return nil, invalidf("checkpoint path %q is not absolute", path)
	}
	if r.GetConfig() == nil {
		return nil, invalidf("no pod sandbox config given")
	}
	cfgs := r.GetContainerConfigs()
	if len(cfgs) == 0 {
		return nil, invalidf("no container configs given")
	}
	byName := map[string]*runtimeapi.ContainerConfig{}
	for _, cfg := range cfgs {
		n := cfg.GetMetadata().GetName()
		if n == "" {
			return nil, invalidf("container config without metadata.name")
		}
		if byName[n] != nil {
			return nil, invalidf("container name %q is given twice", n)
		}
		byName[n] = cfg
	}
	if err := c.checkRuntimeHandler(r.GetRuntimeHandler()); err != nil {
		return nil, err
	}
	cm, err := stage0.ReadCheckpoint(path)
	if err != nil {
		return nil, err
	}
	srcs := map[string]*restoreSource{}
	for i, a := range cm.Pod.Apps {
		ccfg, err := containerConfigOf(a.Annotations)
		if err != nil || ccfg == nil {
			return nil, invalidf("checkpoint %q: app %q is not a CRI container (%v)", path, a.Name, err)
		}
		n := ccfg.GetMetadata().GetName()
		if byName[n] == nil {
			return nil, invalidf("checkpoint %q has container %q, which the request lacks", path, n)
		}
		if a.TTY || byName[n].GetTty() {
			return nil, fmt.Errorf("%w: container %q: containers with a terminal cannot be restored", errFailedPrecondition, n)
		}
		srcs[n] = &restoreSource{files: cm.Files(path, a.Name), imageID: a.Image.ID, want: cm.Apps[i]}
	}
	if len(srcs) != len(byName) {
		return nil, invalidf("the request has %d containers, checkpoint %q %d: names must match", len(byName), path, len(srcs))
	}
	if _, _, err := c.rt.Criu(ctx); err != nil {
		return nil, err
	}
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: r.GetConfig(), RuntimeHandler: r.GetRuntimeHandler()})
	if err != nil {
		return nil, err
	}
	id := rp.GetPodSandboxId()
	var undos []func() // of the containers created, in order
	defer func() {
		if retErr == nil {
			return
		}
		cctx := context.WithoutCancel(ctx)
		if _, err := c.StopPodSandbox(cctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			c.log.Warn("cannot stop the sandbox of a failed restore", "sandbox", id, "error", err)
		}
		if _, err := c.RemovePodSandbox(cctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
			c.log.Warn("cannot remove the sandbox of a failed restore; the mount sources its containers bind are kept", "sandbox", id, "error", err)
			return
		}
		for _, undo := range slices.Backward(undos) { // a later container's sources may be in an earlier one's
			undo()
		}
	}()
	if ps, err := c.rt.Status(ctx, id); err != nil {
		return nil, err
	} else if ps.Manifest == nil || ps.Manifest.SharedPID != cm.Pod.SharedPID {
		return nil, fmt.Errorf("%w: the sandbox config's PID namespace mode is not the checkpointed pod's", errFailedPrecondition)
	}
	resp := &runtimeapi.RestorePodResponse{PodSandboxId: id}
	for _, cfg := range cfgs {
		n := cfg.GetMetadata().GetName()
		cid, undo, err := c.createContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: id, Config: cfg, SandboxConfig: r.GetConfig()}, srcs[n])
		if err != nil {
			return nil, err
		}
		undos = append(undos, undo)
		resp.RestoredContainers = append(resp.RestoredContainers, &runtimeapi.RestoredContainer{Name: n, ContainerId: cid})
	}
	return resp, nil
}

// checkRestored checks that the app of pod uuid, added as the container
// named n in the request to restore the checkpointed app want, runs the
// dumped process: its PID namespace mode, command, working directory and
// user.
func (c *criService) checkRestored(uuid, app, n string, want stage0.CheckpointedApp) error {
	spec, err := c.rt.AppSpec(uuid, app)
	if err != nil {
		return fmt.Errorf("cannot read the spec of container %q: %w", n, err)
	}
	if got := stage0.PIDNamespaceOf(spec); got != want.PIDNamespace {
		return fmt.Errorf("%w: container %q: its PID namespace (%s) is not the checkpointed process's (%s)", errFailedPrecondition, n, got, want.PIDNamespace)
	}
	if p := spec.Process; p == nil || !slices.Equal(p.Args, want.Args) || p.Cwd != want.Cwd || p.User.UID != want.UID || p.User.GID != want.GID {
		return fmt.Errorf("%w: container %q: its command, working directory or user is not the checkpointed process's (%q in %q as %d:%d)",
			errFailedPrecondition, n, want.Args, want.Cwd, want.UID, want.GID)
	}
	return nil
}

// checkRestoreAllowed refuses a restore from what unless the service
// allows restores (Config.CheckpointRestore).
func (c *criService) checkRestoreAllowed(what string) error {
	if c.cfg.CheckpointRestore {
		return nil
	}
	return fmt.Errorf("%w: cannot restore from %s: restores are not allowed (rkt kubelet-service --checkpoint-restore)", errFailedPrecondition, what)
}
