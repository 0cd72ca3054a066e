package kubeletsvc

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/store"
)

// A CreateContainer whose image is a container checkpoint restores it, as
// under CRI-O and containerd: an absolute path names a checkpoint archive
// (CheckpointContainer's, `crictl create` with the archive as image), and
// an image whose only layer is a container checkpoint is a checkpoint
// image (the archive added to an empty image, as the Kubernetes
// documentation builds one for a pod to restore).

// isArchivePath: no image reference starts with a slash.
func isArchivePath(image string) bool { return strings.HasPrefix(image, "/") }

// mayBeCheckpointImage: one layer and nothing to run, as a checkpoint
// image; other images are not looked into.
func mayBeCheckpointImage(img *store.Image) bool {
	if len(img.Layers) != 1 {
		return false
	}
	return img.Config == nil || (len(img.Config.Config.Entrypoint) == 0 && len(img.Config.Config.Cmd) == 0)
}

// checkpointImage returns the container checkpoint img holds, or nil.
func (c *criService) checkpointImage(ctx context.Context, img *store.Image) (*stage0.ContainerCheckpoint, error) {
	paths, err := c.store.LayerPaths(ctx, img)
	if err != nil {
		return nil, err
	}
	cc, err := stage0.ContainerCheckpointIn(paths[0])
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", img.ID, err)
	}
	return cc, nil
}

// createFromCheckpoint creates, in the request's sandbox, the container
// of the checkpoint cc, in CREATED state: its StartContainer restores the
// dumped process. Its command, working directory and image are the
// checkpointed container's (the dumped process's); everything else,
// security context included, is the request's: a checkpoint (a pulled
// image, say) grants itself nothing. The user and PID namespace the
// request leads to must be the dumped process's (checkRestored). It
// returns what createContainer does.
func (c *criService) createFromCheckpoint(ctx context.Context, s *sandbox, r *runtimeapi.CreateContainerRequest, cc *stage0.ContainerCheckpoint) (string, func(), error) {
	defer cc.Close()
	app := cc.Manifest.Pod.Apps[0]
	orig, err := containerConfigOf(app.Annotations)
	if err != nil || orig == nil {
		return "", nil, invalidf("checkpoint of %q is not a CRI container's (%v)", app.Name, err)
	}
	if app.TTY {
		return "", nil, fmt.Errorf("%w: checkpoint of %q: containers with a terminal cannot be restored", errFailedPrecondition, app.Name)
	}
	want := cc.App()
	if want.PIDNamespace == "new" && (s.pod.Manifest == nil || s.pod.Manifest.SharedPID != cc.Manifest.Pod.SharedPID) {
		return "", nil, fmt.Errorf("%w: checkpoint of %q: the sandbox's PID namespace mode is not the checkpointed pod's", errFailedPrecondition, app.Name)
	}
	cfg := restoredConfig(orig, r.GetConfig(), app.Image.ID)
	req := &runtimeapi.CreateContainerRequest{PodSandboxId: s.ID(), Config: cfg, SandboxConfig: r.GetSandboxConfig()}
	id, undo, err := c.createContainer(ctx, req, &restoreSource{files: cc.Files, imageID: app.Image.ID, want: want})
	if errors.Is(err, store.ErrImageNotFound) {
		return "", nil, fmt.Errorf("%w: the image of the checkpointed container, %s (%s), is not on this node: %v", errFailedPrecondition, app.Image.Name, app.Image.ID, err)
	}
	return id, undo, err
}

// restoredConfig is the request's config running the checkpointed
// container's command in its working directory, from its image, with its
// environment under the request's.
func restoredConfig(orig, req *runtimeapi.ContainerConfig, imageID string) *runtimeapi.ContainerConfig {
	cfg := proto.Clone(req).(*runtimeapi.ContainerConfig)
	user := req.GetImage().GetUserSpecifiedImage() // the kubelet's: the pod spec's image
	if user == "" {
		user = req.GetImage().GetImage()
	}
	cfg.Image = &runtimeapi.ImageSpec{Image: imageID, UserSpecifiedImage: user}
	cfg.Command, cfg.Args, cfg.WorkingDir = orig.GetCommand(), orig.GetArgs(), orig.GetWorkingDir()
	set := map[string]bool{}
	for _, e := range req.GetEnvs() {
		set[e.GetKey()] = true
	}
	var envs []*runtimeapi.KeyValue
	for _, e := range orig.GetEnvs() {
		if !set[e.GetKey()] {
			envs = append(envs, proto.Clone(e).(*runtimeapi.KeyValue))
		}
	}
	cfg.Envs = append(envs, cfg.Envs...)
	return cfg
}
