package stage0

import (
	"fmt"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/envlist"
	"github.com/rkt/rkt/pkg/schema"
)

// defaultPath is the PATH of apps whose image sets none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// specInput is everything buildSpec needs to build an app's runtime spec.
type specInput struct {
	pod    *schema.PodManifest
	podDir string // final (absolute) pod directory
	app    schema.App
	image  *Image
	opts   AppOptions
	rootfs string // mounted rootfs (to read /etc/passwd and /etc/group)
	// targetPID is the pid whose PID namespace the app joins
	// (NamespaceTarget), resolved by the caller.
	targetPID int
	// imageMounts maps the index of an image Mount to the host directory
	// holding the mounted image (and sub path).
	imageMounts map[int]string
}

// buildSpec builds the OCI runtime spec of one app from its image and
// options.
func buildSpec(in specInput) (*specs.Spec, error) {
	o := in.opts
	cfg := in.image.Config
	if cfg == nil {
		return nil, fmt.Errorf("image %s has no configuration", in.image.ID)
	}
	args, err := processArgs(cfg.Config.Entrypoint, cfg.Config.Cmd, o.Exec, o.Args)
	if err != nil {
		return nil, fmt.Errorf("app %q: %w", in.app.Name, err)
	}
	userSpec := o.User
	if userSpec == "" {
		userSpec = cfg.Config.User
	}
	usr, home, err := resolveUser(in.rootfs, userSpec, o.Group, o.SupplementaryGroups, o.StrictGroups)
	if err != nil {
		return nil, fmt.Errorf("app %q: %w", in.app.Name, err)
	}
	// HOSTNAME first, so that the image or the caller can override it, as
	// containerd and CRI-O do.
	env := envlist.Merge(envlist.Merge([]string{"HOSTNAME=" + podHostname(in.pod)}, validEnv(cfg.Config.Env)), o.Env)
	if !envlist.Has(env, "PATH") {
		env = append(env, "PATH="+defaultPath)
	}
	if !envlist.Has(env, "HOME") {
		env = append(env, "HOME="+home)
	}
	if o.TTY && !envlist.Has(env, "TERM") {
		env = append(env, "TERM=xterm")
	}
	cwd := o.WorkingDir
	if cwd == "" {
		cwd = cfg.Config.WorkingDir
	}
	if cwd == "" {
		cwd = "/"
	}
	if !filepath.IsAbs(cwd) || strings.ContainsRune(cwd, 0) {
		return nil, fmt.Errorf("app %q: working directory %q is not an absolute path: %w", in.app.Name, cwd, ErrInvalid)
	}
	caps, err := capabilities(o)
	if err != nil {
		return nil, fmt.Errorf("app %q: %w", in.app.Name, err)
	}
	rlimits, err := rlimits(o.Rlimits)
	if err != nil {
		return nil, fmt.Errorf("app %q: %w", in.app.Name, err)
	}
	if err := checkLSM(o); err != nil {
		return nil, fmt.Errorf("app %q: %w", in.app.Name, err)
	}

	s := &specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{
			Terminal:        o.TTY,
			User:            usr,
			Args:            args,
			Env:             env,
			Cwd:             cwd,
			Capabilities:    caps,
			Rlimits:         rlimits,
			NoNewPrivileges: o.NoNewPrivileges,
			OOMScoreAdj:     o.OOMScoreAdj,
		},
		Root: &specs.Root{
			Path:     schema.PodDir(in.podDir).App(in.app.Name).Rootfs(),
			Readonly: o.ReadonlyRootfs,
		},
		Annotations: copyMap(o.Annotations),
		Linux: &specs.Linux{
			CgroupsPath: cgroupsPath(in.pod, in.app.Name),
			Sysctl:      copyMap(o.Sysctls), // the pod's own are set by stage1
			Resources:   &specs.LinuxResources{},
		},
	}
	if o.Resources != nil {
		res := *o.Resources
		s.Linux.Resources = &res
	}
	s.Linux.Namespaces, err = namespaces(in.pod, o, in.targetPID)
	if err != nil {
		return nil, fmt.Errorf("app %q: %w", in.app.Name, err)
	}
	if err := addMounts(s, in); err != nil {
		return nil, fmt.Errorf("app %q: %w", in.app.Name, err)
	}
	addUserNS(s, in.pod)
	if err := addDevices(s, o); err != nil {
		return nil, fmt.Errorf("app %q: %w", in.app.Name, err)
	}
	if !o.Privileged {
		s.Linux.MaskedPaths = pathsOrDefault(o.MaskedPaths, defaultMaskedPaths)
		s.Linux.ReadonlyPaths = pathsOrDefault(o.ReadonlyPaths, defaultReadonlyPaths)
	}
	if s.Linux.Seccomp, err = seccompFor(o); err != nil {
		return nil, fmt.Errorf("app %q: %w", in.app.Name, err)
	}
	return s, nil
}

// validEnv drops the entries of an image's Env that are no KEY=VALUE (no
// '=', or an empty key) or hold a NUL byte: libcontainer refuses such an
// environment and execve cannot take it, so the app would never start.
// containerd takes "KEY" as unsetting KEY and CRI-O skips it; here it is
// skipped.
func validEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if i := strings.IndexByte(kv, '='); i > 0 && !strings.ContainsRune(kv, 0) {
			out = append(out, kv)
		}
	}
	return out
}

// processArgs combines the image's entrypoint and cmd with the overrides,
// as Docker and the CRI do: an exec override drops the image's cmd too.
func processArgs(entrypoint, cmd, exec, args []string) ([]string, error) {
	var out []string
	if len(exec) > 0 {
		out = append(append(out, exec...), args...)
	} else {
		if len(args) == 0 {
			args = cmd
		}
		if !(len(entrypoint) == 1 && entrypoint[0] == "") {
			out = append(out, entrypoint...)
		}
		out = append(out, args...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no command: the image has no entrypoint or cmd and none was given: %w", ErrInvalid)
	}
	for i, a := range out {
		if strings.ContainsRune(a, 0) {
			return nil, fmt.Errorf("argument %d of the command, %q, holds a NUL byte: %w", i, a, ErrInvalid)
		}
	}
	return out, nil
}

// cgroupsPath is <cgroup parent>/<pod uuid>/<app>.
func cgroupsPath(pm *schema.PodManifest, app string) string {
	parent := pm.CgroupParent
	if parent == "" {
		parent = DefaultCgroupParent
	}
	return filepath.Join("/", parent, pm.UUID, app)
}

// namespaces lists the app's namespaces; an empty path means the pod's (stage1
// fills it in).
func namespaces(pm *schema.PodManifest, o AppOptions, targetPID int) ([]specs.LinuxNamespace, error) {
	ns := []specs.LinuxNamespace{{Type: specs.MountNamespace}}
	hostNet := pm.Net == "host"
	if !hostNet {
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace}, specs.LinuxNamespace{Type: specs.UTSNamespace})
	}
	if !pm.HostIPC {
		ns = append(ns, specs.LinuxNamespace{Type: specs.IPCNamespace})
	}
	// An empty pid path is the pod's shared PID namespace when the pod has
	// one, else a new namespace for the app.
	switch o.PIDMode {
	case NamespacePod:
		if !pm.HostPID {
			ns = append(ns, specs.LinuxNamespace{Type: specs.PIDNamespace})
		}
	case NamespaceContainer:
		if pm.SharedPID {
			return nil, fmt.Errorf("an app of a pod with a shared PID namespace cannot have its own: %w", ErrInvalid)
		}
		ns = append(ns, specs.LinuxNamespace{Type: specs.PIDNamespace})
	case NamespaceNode:
	case NamespaceTarget:
		if targetPID <= 0 {
			return nil, fmt.Errorf("PID namespace target %q is not running: %w", o.PIDTarget, ErrInvalid)
		}
		ns = append(ns, specs.LinuxNamespace{Type: specs.PIDNamespace, Path: fmt.Sprintf("/proc/%d/ns/pid", targetPID)})
	default:
		return nil, fmt.Errorf("unknown PID namespace mode %d: %w", o.PIDMode, ErrInvalid)
	}
	return ns, nil
}
