package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/rlimit"
	"github.com/rkt/rkt/pkg/schema"
)

// podNamespaces are the paths of the namespaces the pod holds; an app
// namespace entry with an empty path of one of these types joins it.
type podNamespaces struct {
	net string // <pod>/netns; empty for host networking
	ipc string
	uts string
	pid string // the shared PID namespace; empty when the pod has none
	// user is <pod>/userns when the pod has a user namespace; apps whose
	// spec asks for a user namespace without a path join it.
	user string
}

// loadAppSpec reads apps/<name>/config.json.
func loadAppSpec(podDir, name string) (*specs.Spec, error) {
	p := schema.PodDir(podDir).App(name).Spec()
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("cannot read spec of app %q: %w", name, err)
	}
	var spec specs.Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		return nil, fmt.Errorf("cannot parse spec %q: %w", p, err)
	}
	if spec.Process == nil || len(spec.Process.Args) == 0 {
		return nil, fmt.Errorf("spec %q has no process args", p)
	}
	if spec.Root == nil || !filepath.IsAbs(spec.Root.Path) {
		return nil, fmt.Errorf("spec %q needs an absolute root.path", p)
	}
	if spec.Linux == nil {
		return nil, fmt.Errorf("spec %q has no linux section", p)
	}
	return &spec, nil
}

// adjustSpec fills in the pod's namespaces, drops the hostname when the app
// shares the pod's UTS namespace (stage1 set it), and clamps what this
// process may not set.
func adjustSpec(spec *specs.Spec, ns podNamespaces, lim limits) error {
	var out []specs.LinuxNamespace
	for _, n := range spec.Linux.Namespaces {
		if n.Path == "" {
			switch n.Type {
			case specs.NetworkNamespace:
				if ns.net == "" {
					// host networking: the app stays in the supervisor's
					// (the host's) network namespace.
					continue
				}
				n.Path = ns.net
			case specs.IPCNamespace:
				n.Path = ns.ipc
			case specs.UTSNamespace:
				n.Path = ns.uts
				spec.Hostname = ""
				spec.Domainname = ""
			case specs.PIDNamespace:
				if ns.pid != "" {
					n.Path = ns.pid
				}
			case specs.UserNamespace:
				n.Path = ns.user
			}
		}
		out = append(out, n)
	}
	spec.Linux.Namespaces = out
	if spec.Process.OOMScoreAdj != nil {
		v := lim.clampOOMScoreAdj(*spec.Process.OOMScoreAdj)
		spec.Process.OOMScoreAdj = &v
	}
	for i := range spec.Process.Rlimits {
		lim.clampRlimit(&spec.Process.Rlimits[i])
	}
	return nil
}

// libcontainerConfig converts an adjusted spec.
func libcontainerConfig(name string, spec *specs.Spec, systemd bool) (*configs.Config, error) {
	if systemd {
		spec.Linux.CgroupsPath = systemdCgroupsPath(spec.Linux.CgroupsPath)
	}
	cfg, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName:       name,
		UseSystemdCgroup: systemd,
		Spec:             spec,
	})
	if err != nil {
		return nil, fmt.Errorf("cannot convert spec of app %q: %w", name, err)
	}
	// runc's specconv leaves the rlimits to its caller (runc's CLI puts
	// them on each process): set them on the container, which gives them
	// to its init and to every exec.
	for _, r := range spec.Process.Rlimits {
		t, ok := rlimit.Resource(r.Type)
		if !ok {
			return nil, fmt.Errorf("cannot convert spec of app %q: unknown rlimit %q", name, r.Type)
		}
		cfg.Rlimits = append(cfg.Rlimits, configs.Rlimit{Type: t, Hard: r.Hard, Soft: r.Soft})
	}
	// libcontainer gives the init 0022 when the spec has no umask, and an
	// exec the umask of its caller, the supervisor (rkt run's user's, the
	// service's): give every process of the app the init's.
	if cfg.Umask == nil {
		u := uint32(0o022)
		cfg.Umask = &u
	}
	// The app dies with its supervisor.
	cfg.ParentDeathSignal = int(unix.SIGKILL)
	return cfg, nil
}
