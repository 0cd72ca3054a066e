package kubeletsvc

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/kubeletsvc/internal/registrar"
	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/store"
)

// CreateContainer adds an app (not started) to a running sandbox's pod. It
// checks the whole request first (translateContainer, then the mount
// sources on the host) and only then acts: creates missing mount sources,
// resolves images and adds the app, undoing what it did on failure.
func (c *criService) CreateContainer(ctx context.Context, r *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	id, _, err := c.createContainer(ctx, r, nil)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

// createContainer is CreateContainer; with restore set, the container is
// one of a pod checkpoint (RestorePod): its image must be the checkpointed
// app's, its process the dumped one (checkRestored), and its start
// restores that process. With the new container's ID it returns an undo
// that removes the mount sources it created on the host, for a caller
// that removes the container again (a RestorePod refused later).
func (c *criService) createContainer(ctx context.Context, r *runtimeapi.CreateContainerRequest, restore *restoreSource) (string, func(), error) {
	cfg := r.GetConfig()
	md := cfg.GetMetadata()
	if md.GetName() == "" {
		return "", nil, invalidf("container config: metadata.name is empty")
	}
	s, err := c.getSandbox(ctx, r.GetPodSandboxId())
	if err != nil {
		return "", nil, err
	}
	image := cfg.GetImage().GetImage()
	if restore == nil && isArchivePath(image) {
		if err := c.checkRestoreAllowed("container checkpoint archive " + image); err != nil {
			return "", nil, err
		}
		cc, err := c.rt.OpenContainerArchive(s.ID(), image)
		if err != nil {
			return "", nil, err
		}
		return c.createFromCheckpoint(ctx, s, r, cc)
	}
	plan, err := translateContainer(s.cfg, cfg)
	if err != nil {
		return "", nil, err
	}
	key := containerKey(s.ID(), md)
	img, err := c.store.ResolveImage(image)
	if err != nil {
		return "", nil, fmt.Errorf("cannot create container %q: image %q: %w", key, image, err)
	}
	if restore == nil && mayBeCheckpointImage(img) {
		// its layer is read until the restored app is added
		hold, err := c.store.Hold(ctx)
		if err != nil {
			return "", nil, fmt.Errorf("cannot create container %q: %w", key, err)
		}
		defer hold.Close()
		cc, err := c.checkpointImage(ctx, img)
		if err != nil {
			return "", nil, err
		}
		if cc != nil {
			if err := c.checkRestoreAllowed("checkpoint image " + image); err != nil {
				return "", nil, err
			}
			return c.createFromCheckpoint(ctx, s, r, cc)
		}
	}
	if !s.ready() {
		return "", nil, fmt.Errorf("%w: pod sandbox %s is not ready", errFailedPrecondition, s.ID())
	}
	missing, err := checkMountSources(ctx, plan.opts.Mounts)
	if err != nil {
		return "", nil, fmt.Errorf("container %q: %w", md.GetName(), err)
	}
	if err := checkDevices(ctx, plan.opts.Devices); err != nil {
		return "", nil, fmt.Errorf("container %q: %w", md.GetName(), err)
	}
	id, err := newContainerID(s.ID())
	if err != nil {
		return "", nil, err
	}
	done, err := c.reserve(ctx, c.containerNames, key, id, c.containerGone)
	if err != nil {
		var er *registrar.ErrReserved
		if errors.As(err, &er) {
			return "", nil, fmt.Errorf("%w: container name %q is already used by container %s", errAlreadyExists, key, er.Owner)
		}
		return "", nil, err
	}
	created := false
	defer func() {
		if !created {
			c.containerNames.Release(id)
		}
		done()
	}()

	if restore != nil && img.ID != restore.imageID {
		// refused before any mount source is created on the host
		return "", nil, fmt.Errorf("%w: container %q: image %s is not the checkpointed %s", errFailedPrecondition, key, img.ID, restore.imageID)
	}
	opts, err := c.completeAppOptions(ctx, s, cfg, plan, img, id)
	if err != nil {
		return "", nil, fmt.Errorf("cannot create container %q: %w", key, err)
	}
	undo, err := createMountSources(missing)
	if err != nil {
		return "", nil, fmt.Errorf("cannot create container %q: %w", key, err)
	}
	if restore != nil {
		opts.RestoreFrom = &restore.files
	} else {
		opts.Prestart = true // StartContainer follows
	}
	app, err := c.addApp(ctx, s, opts, id)
	if err != nil {
		undo()
		return "", nil, fmt.Errorf("cannot create container %q: %w", key, err)
	}
	if restore != nil {
		// what the dumped process needs is known only from the app's spec
		if err := c.checkRestored(s.ID(), app, md.GetName(), restore.want); err != nil {
			if rerr := c.rt.RemoveApp(context.WithoutCancel(ctx), s.ID(), app); rerr != nil && !isNotFound(rerr) {
				// it is listed: its name and mount sources stay with it
				c.log.Warn("cannot remove the app of a refused restore", "pod", s.ID(), "app", app, "error", rerr)
				created = true
			} else {
				undo()
			}
			return "", nil, err
		}
	}
	created = true
	if c.events.subscribers() > 0 { // reading the container back costs as much as its config is big
		if ct, err := c.getContainer(ctx, id); err == nil {
			c.emit(ct, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
		}
	}
	return id, undo, nil
}

// addApp adds the app, under a disambiguated name if the sanitized one is
// taken, and returns the name it got.
func (c *criService) addApp(ctx context.Context, s *sandbox, opts stage0.AppOptions, id string) (string, error) {
	_, err := c.rt.AddApp(ctx, s.ID(), opts)
	if errors.Is(err, stage0.ErrAppExists) {
		opts.Name += "-" + id[32:40]
		_, err = c.rt.AddApp(ctx, s.ID(), opts)
	}
	return opts.Name, err
}

// completeAppOptions fills in what translateContainer leaves: the image,
// the image volumes, the PID namespace target and the CRI annotations.
func (c *criService) completeAppOptions(ctx context.Context, s *sandbox, cfg *runtimeapi.ContainerConfig, plan containerPlan, img *store.Image, id string) (stage0.AppOptions, error) {
	opts := plan.opts
	opts.Image = img.ID
	userImage := cfg.GetImage().GetUserSpecifiedImage()
	if userImage == "" {
		userImage = cfg.GetImage().GetImage()
	}
	if len(plan.imageVolumes) > 0 {
		cfg = proto.Clone(cfg).(*runtimeapi.ContainerConfig) // image volumes get their image_ref
		opts.Mounts = append([]stage0.Mount{}, opts.Mounts...)
		for _, i := range plan.imageVolumes {
			m := cfg.GetMounts()[i]
			mnt, err := c.imageVolume(opts.Mounts[i])
			if err != nil {
				return opts, err
			}
			m.Image.ImageRef = mnt.Image
			opts.Mounts[i] = mnt
		}
	}
	if plan.pidTarget != "" {
		target, err := c.getContainer(ctx, plan.pidTarget)
		if err != nil {
			return opts, fmt.Errorf("PID namespace target: %w", err)
		}
		if target.sb.ID() != s.ID() {
			return opts, invalidf("PID namespace target %s is in another pod sandbox", plan.pidTarget)
		}
		opts.PIDTarget = target.app.App.Name
	}
	annos, err := containerAnnotations(id, cfg, img.ID, userImage)
	if err != nil {
		return opts, err
	}
	opts.Annotations = annos
	return opts, nil
}
