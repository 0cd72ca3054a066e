package kubeletsvc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/kubeletsvc/internal/registrar"
	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/store"
)

// CreateContainer adds an app (not started) to a running sandbox's pod.
func (c *criService) CreateContainer(ctx context.Context, r *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	cfg := r.GetConfig()
	md := cfg.GetMetadata()
	if md == nil || md.GetName() == "" {
		return nil, invalidf("container config has no metadata name")
	}
	if cfg.GetImage().GetImage() == "" {
		return nil, invalidf("container %q has no image", md.GetName())
	}
	if _, err := stopSignalOption(cfg.GetStopSignal()); err != nil {
		return nil, fmt.Errorf("container %q: %w", md.GetName(), err)
	}
	s, err := c.getSandbox(ctx, r.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	if !s.ready() {
		return nil, fmt.Errorf("%w: pod sandbox %s is not ready", errFailedPrecondition, s.ID())
	}
	id, err := newContainerID(s.ID())
	if err != nil {
		return nil, err
	}
	key := containerKey(s.ID(), md)
	if err := c.containerNames.Reserve(key, id); err != nil {
		var er *registrar.ErrReserved
		if errors.As(err, &er) {
			return nil, fmt.Errorf("%w: container name %q is already used by container %s", errAlreadyExists, key, er.Owner)
		}
		return nil, err
	}
	created := false
	defer func() {
		if !created {
			c.containerNames.Release(id)
		}
	}()

	img, err := c.store.ResolveImage(cfg.GetImage().GetImage())
	if err != nil {
		return nil, fmt.Errorf("cannot create container %q: image %q: %w", key, cfg.GetImage().GetImage(), err)
	}
	opts, err := c.appOptions(ctx, s, cfg, img, id)
	if err != nil {
		return nil, fmt.Errorf("cannot create container %q: %w", key, err)
	}
	if _, err := c.rt.AddApp(ctx, s.ID(), opts); err != nil {
		if !errors.Is(err, stage0.ErrAppExists) {
			return nil, fmt.Errorf("cannot create container %q: %w", key, err)
		}
		opts.Name += "-" + id[32:40] // a sanitized name collided: disambiguate
		if _, err := c.rt.AddApp(ctx, s.ID(), opts); err != nil {
			return nil, fmt.Errorf("cannot create container %q: %w", key, err)
		}
	}
	created = true
	if ct, err := c.getContainer(ctx, id); err == nil {
		c.emit(ct, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	}
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

var appNameInvalid = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// appName derives a readable stage0 app name from the CRI name and attempt.
func appName(md *runtimeapi.ContainerMetadata) string {
	n := appNameInvalid.ReplaceAllString(md.GetName(), "-")
	if len(n) > 200 {
		n = n[:200]
	}
	if n == "" || !isAlnum(n[0]) {
		n = "c" + n
	}
	return n + "-" + strconv.FormatUint(uint64(md.GetAttempt()), 10)
}

func isAlnum(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// appOptions translates a container config to stage0's app options.
func (c *criService) appOptions(ctx context.Context, s *sandbox, cfg *runtimeapi.ContainerConfig, img *store.Image, id string) (stage0.AppOptions, error) {
	userImage := cfg.GetImage().GetUserSpecifiedImage()
	if userImage == "" {
		userImage = cfg.GetImage().GetImage()
	}
	cfg = proto.Clone(cfg).(*runtimeapi.ContainerConfig) // image volumes get their image_ref
	var mounts []stage0.Mount
	for _, m := range cfg.GetMounts() {
		if m.GetImage().GetImage() != "" {
			mnt, imgID, err := c.imageVolume(ctx, m)
			if err != nil {
				return stage0.AppOptions{}, err
			}
			m.Image.ImageRef = imgID
			mounts = append(mounts, mnt)
			continue
		}
		mnt, err := appMount(m)
		if err != nil {
			return stage0.AppOptions{}, err
		}
		mounts = append(mounts, mnt)
	}
	annos, err := containerAnnotations(id, cfg, img.ID, userImage)
	if err != nil {
		return stage0.AppOptions{}, err
	}
	stopSignal, err := stopSignalOption(cfg.GetStopSignal())
	if err != nil {
		return stage0.AppOptions{}, err
	}
	opts := stage0.AppOptions{
		StopSignal:  stopSignal,
		Name:        appName(cfg.GetMetadata()),
		Image:       img.ID,
		Exec:        cfg.GetCommand(),
		Args:        cfg.GetArgs(),
		WorkingDir:  cfg.GetWorkingDir(),
		TTY:         cfg.GetTty(),
		Stdin:       cfg.GetStdin(),
		StdinOnce:   cfg.GetStdinOnce(),
		LogPath:     containerLogPath(s.cfg, cfg),
		Annotations: annos,
	}
	for _, kv := range cfg.GetEnvs() {
		opts.Env = append(opts.Env, kv.GetKey()+"="+string(kv.GetValue()))
	}
	opts.Mounts = mounts
	for _, d := range cfg.GetDevices() {
		opts.Devices = append(opts.Devices, stage0.Device{HostPath: d.GetHostPath(), ContainerPath: d.GetContainerPath(), Permissions: d.GetPermissions()})
	}
	if err := c.applyLinux(ctx, s, cfg.GetLinux(), &opts); err != nil {
		return opts, err
	}
	return opts, nil
}

// containerLogPath is the absolute CRI log path: the sandbox's log
// directory joined with the container's relative log path; empty (stage0's
// default) when the kubelet gave none.
func containerLogPath(sb *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) string {
	p := cfg.GetLogPath()
	if p == "" {
		return ""
	}
	if filepath.IsAbs(p) {
		return p
	}
	if sb.GetLogDirectory() == "" {
		return ""
	}
	return filepath.Join(sb.GetLogDirectory(), p)
}

// appMount translates a CRI mount. A missing host path is created as a
// directory, as the kubelet expects of runtimes.
func appMount(m *runtimeapi.Mount) (stage0.Mount, error) {
	if !filepath.IsAbs(m.GetContainerPath()) {
		return stage0.Mount{}, invalidf("mount destination %q is not absolute", m.GetContainerPath())
	}
	if m.GetHostPath() == "" {
		return stage0.Mount{}, invalidf("mount at %q has no host path", m.GetContainerPath())
	}
	if _, err := os.Lstat(m.GetHostPath()); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(m.GetHostPath(), 0o755); err != nil {
			return stage0.Mount{}, fmt.Errorf("cannot create missing mount source %q: %w", m.GetHostPath(), err)
		}
	}
	mnt := stage0.Mount{
		Source:            m.GetHostPath(),
		Destination:       m.GetContainerPath(),
		ReadOnly:          m.GetReadonly() || m.GetRecursiveReadOnly(),
		RecursiveReadOnly: m.GetRecursiveReadOnly(),
	}
	switch m.GetPropagation() {
	case runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER:
		mnt.Propagation = "rslave"
	case runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL:
		mnt.Propagation = "rshared"
	default:
		mnt.Propagation = "private"
	}
	if m.GetRecursiveReadOnly() && !m.GetReadonly() {
		return stage0.Mount{}, invalidf("mount at %q: recursive read-only needs read-only", m.GetContainerPath())
	}
	if m.GetRecursiveReadOnly() && mnt.Propagation != "private" {
		return stage0.Mount{}, invalidf("mount at %q: recursive read-only needs private propagation", m.GetContainerPath())
	}
	return mnt, nil
}
