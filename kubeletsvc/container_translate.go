package kubeletsvc

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/store"
)

// containerPlan is a container config checked and translated for stage0.
// What needs the store or other containers is left for CreateContainer:
// Image, Annotations, PIDTarget and the image volumes.
type containerPlan struct {
	opts stage0.AppOptions
	// imageVolumes are the indexes of image volumes in opts.Mounts (and in
	// the config's mounts): Image set to the CRI ref, which CreateContainer
	// resolves to an image ID (imageVolume).
	imageVolumes []int
	// pidTarget is the container whose PID namespace to join
	// (opts.PIDMode == NamespaceTarget).
	pidTarget string
}

// translateContainer checks a container config against its sandbox's and
// translates it. It is pure: it reads no file and changes nothing, so
// CreateContainer refuses a bad request before acting on any of it.
func translateContainer(sb *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) (containerPlan, error) {
	var plan containerPlan
	md := cfg.GetMetadata()
	if md.GetName() == "" {
		return plan, invalidf("container config: metadata.name is empty")
	}
	if img := cfg.GetImage().GetImage(); img == "" {
		return plan, invalidf("container %q: image.image is empty", md.GetName())
	} else if _, err := store.ParseReference(img); err != nil && !strings.HasPrefix(img, "sha256:") {
		return plan, invalidf("container %q: image.image: %v", md.GetName(), err)
	}
	if err := translateContainerOpts(sb, cfg, &plan); err != nil {
		return containerPlan{}, fmt.Errorf("container %q: %w", md.GetName(), err)
	}
	return plan, nil
}

func translateContainerOpts(sb *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig, plan *containerPlan) error {
	if err := checkMetadataSize(cfg.GetLabels(), cfg.GetAnnotations()); err != nil {
		return err
	}
	stopSignal, err := stopSignalOption(cfg.GetStopSignal())
	if err != nil {
		return err
	}
	logPath, err := containerLogPath(sb, cfg)
	if err != nil {
		return err
	}
	if err := checkStrings("command", cfg.GetCommand()); err != nil {
		return err
	}
	if err := checkStrings("args", cfg.GetArgs()); err != nil {
		return err
	}
	if wd := cfg.GetWorkingDir(); wd != "" && (!filepath.IsAbs(wd) || strings.ContainsRune(wd, 0)) {
		return invalidf("working_dir %q is not an absolute path", wd)
	}
	o := &plan.opts
	*o = stage0.AppOptions{
		StopSignal: stopSignal,
		Name:       appName(cfg.GetMetadata()),
		Exec:       cfg.GetCommand(),
		Args:       cfg.GetArgs(),
		WorkingDir: cfg.GetWorkingDir(),
		TTY:        cfg.GetTty(),
		Stdin:      cfg.GetStdin(),
		StdinOnce:  cfg.GetStdinOnce(),
		LogPath:    logPath,
	}
	if o.Env, err = containerEnv(cfg.GetEnvs()); err != nil {
		return err
	}
	for i, m := range cfg.GetMounts() {
		if m.GetImage().GetImage() != "" {
			mnt, err := imageVolumeMount(i, m)
			if err != nil {
				return err
			}
			plan.imageVolumes = append(plan.imageVolumes, i)
			o.Mounts = append(o.Mounts, mnt)
			continue
		}
		mnt, err := appMount(i, m)
		if err != nil {
			return err
		}
		o.Mounts = append(o.Mounts, mnt)
	}
	for i, d := range cfg.GetDevices() {
		dev, err := appDevice(i, d)
		if err != nil {
			return err
		}
		o.Devices = append(o.Devices, dev)
	}
	plan.pidTarget, err = translateLinux(sb, cfg.GetLinux(), o)
	return err
}

// maxMetadata bounds the labels plus annotations of a sandbox or container
// (Kubernetes itself allows 256 KiB of pod annotations): they are stored,
// and copied, in the pod's manifests.
const maxMetadata = 1 << 20

func checkMetadataSize(labels, annos map[string]string) error {
	n := 0
	for k, v := range labels {
		n += len(k) + len(v)
	}
	if n > maxMetadata {
		return invalidf("labels are %d bytes, over the %d byte limit", n, maxMetadata)
	}
	for k, v := range annos {
		n += len(k) + len(v)
	}
	if n > maxMetadata {
		return invalidf("annotations (with labels) are %d bytes, over the %d byte limit", n, maxMetadata)
	}
	return nil
}

// checkStrings refuses NUL bytes, which no exec or path can carry.
func checkStrings(field string, ss []string) error {
	for i, s := range ss {
		if strings.ContainsRune(s, 0) {
			return invalidf("%s[%d] contains a NUL byte", field, i)
		}
	}
	return nil
}

// containerEnv turns CRI env entries into KEY=VALUE; a key must be
// non-empty and hold no '=' and no NUL, a value no NUL.
func containerEnv(kvs []*runtimeapi.KeyValue) ([]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	env := make([]string, 0, len(kvs))
	for i, kv := range kvs {
		k, v := kv.GetKey(), kv.GetValue()
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, invalidf("envs[%d].key %q is empty or has '=' or NUL", i, k)
		}
		if strings.IndexByte(string(v), 0) >= 0 {
			return nil, invalidf("envs[%d].value of %q contains a NUL byte", i, k)
		}
		env = append(env, k+"="+string(v))
	}
	return env, nil
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

// containerLogPath is the absolute CRI log path: the sandbox's
// log_directory joined with the container's log_path; empty (stage0's
// default, in the app directory) when either is unset. An absolute or
// escaping log_path, or a relative log_directory, is refused: the file
// must land inside the directory the kubelet gave.
func containerLogPath(sb *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) (string, error) {
	p, dir := cfg.GetLogPath(), sb.GetLogDirectory()
	if p == "" {
		return "", nil
	}
	if strings.ContainsRune(p, 0) || filepath.IsAbs(p) {
		return "", invalidf("log_path %q must be relative to the sandbox's log_directory", p)
	}
	if c := filepath.Clean(p); c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", invalidf("log_path %q is outside the sandbox's log_directory", p)
	}
	if dir == "" {
		return "", nil
	}
	if err := checkLogDirectory(dir); err != nil {
		return "", err
	}
	return filepath.Join(dir, p), nil
}

// checkLogDirectory refuses a sandbox log_directory that is not absolute
// (stage1 would resolve it against the app's directory).
func checkLogDirectory(dir string) error {
	if dir != "" && (!filepath.IsAbs(dir) || strings.ContainsRune(dir, 0)) {
		return invalidf("log_directory %q is not an absolute path", dir)
	}
	return nil
}

// checkPath refuses a path field that is empty, relative or holds a NUL.
func checkPath(field, p string) error {
	if !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return invalidf("%s %q is not an absolute path", field, p)
	}
	return nil
}

// appMount translates a CRI bind mount. A missing host path is created by
// CreateContainer, once the whole request has been checked.
func appMount(i int, m *runtimeapi.Mount) (stage0.Mount, error) {
	field := fmt.Sprintf("mounts[%d]", i)
	if err := checkPath(field+".container_path", m.GetContainerPath()); err != nil {
		return stage0.Mount{}, err
	}
	if err := checkPath(field+".host_path", m.GetHostPath()); err != nil {
		return stage0.Mount{}, err
	}
	mnt := stage0.Mount{
		Source:            m.GetHostPath(),
		Destination:       m.GetContainerPath(),
		ReadOnly:          m.GetReadonly() || m.GetRecursiveReadOnly(),
		RecursiveReadOnly: m.GetRecursiveReadOnly(),
	}
	switch m.GetPropagation() {
	case runtimeapi.MountPropagation_PROPAGATION_PRIVATE:
		mnt.Propagation = "private"
	case runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER:
		mnt.Propagation = "rslave"
	case runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL:
		mnt.Propagation = "rshared"
	default:
		return stage0.Mount{}, invalidf("%s.propagation: unknown value %d", field, m.GetPropagation())
	}
	if m.GetRecursiveReadOnly() && !m.GetReadonly() {
		return stage0.Mount{}, invalidf("%s at %q: recursive_read_only needs readonly", field, m.GetContainerPath())
	}
	if m.GetRecursiveReadOnly() && mnt.Propagation != "private" {
		return stage0.Mount{}, invalidf("%s at %q: recursive_read_only needs private propagation", field, m.GetContainerPath())
	}
	return mnt, nil
}

// imageVolumeMount checks a CRI image volume and returns its placeholder:
// Image is the CRI image ref, SubPath the cleaned image_sub_path.
func imageVolumeMount(i int, m *runtimeapi.Mount) (stage0.Mount, error) {
	field := fmt.Sprintf("mounts[%d]", i)
	ref := m.GetImage().GetImage()
	if !m.GetReadonly() {
		return stage0.Mount{}, invalidf("%s: image volume %q at %q must be readonly", field, ref, m.GetContainerPath())
	}
	if err := checkPath(field+".container_path", m.GetContainerPath()); err != nil {
		return stage0.Mount{}, err
	}
	// As Kubernetes validates subPath: relative and no ".." component ("a..b"
	// is a name).
	sub := m.GetImageSubPath()
	if sub != "" {
		clean := filepath.Clean("/" + sub)
		if clean == "/" || !filepath.IsLocal(sub) || slices.Contains(strings.Split(sub, "/"), "..") || strings.ContainsRune(sub, 0) {
			return stage0.Mount{}, invalidf("%s.image_sub_path %q is not a path inside the image", field, sub)
		}
		sub = clean
	}
	return stage0.Mount{Image: ref, SubPath: sub, Destination: m.GetContainerPath(), ReadOnly: true, Propagation: "private"}, nil
}

// appDevice translates a CRI device.
func appDevice(i int, d *runtimeapi.Device) (stage0.Device, error) {
	field := fmt.Sprintf("devices[%d]", i)
	if err := checkPath(field+".host_path", d.GetHostPath()); err != nil {
		return stage0.Device{}, err
	}
	if p := d.GetContainerPath(); p != "" {
		if err := checkPath(field+".container_path", p); err != nil {
			return stage0.Device{}, err
		}
	}
	if strings.Trim(d.GetPermissions(), "rwm") != "" {
		return stage0.Device{}, invalidf("%s.permissions %q: want letters of \"rwm\"", field, d.GetPermissions())
	}
	return stage0.Device{HostPath: d.GetHostPath(), ContainerPath: d.GetContainerPath(), Permissions: d.GetPermissions()}, nil
}
