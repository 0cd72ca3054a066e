package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/spf13/pflag"

	"github.com/rkt/rkt/stage0"
)

// appFlags are the per-app options of run, prepare and app add; in run and
// prepare they follow the image they apply to.
type appFlags struct {
	name           string
	exec           string
	args           []string // after "--"
	env            []string
	user           string
	group          string
	suppGroups     []string
	workingDir     string
	stopSignal     string
	mounts         []string
	cpu            string
	memory         string
	cpuShares      uint64
	capsRetain     []string
	capsRemove     []string
	capsAdd        []string
	seccomp        string
	readonlyRootfs bool
	privileged     bool
	noNewPrivs     bool
	oomScoreAdj    int
	oomSet         bool
	stdin          bool
	tty            bool
	annotations    []string
	pid            string
}

// appFlagSet binds the per-app flags to f.
func appFlagSet(f *appFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("app", pflag.ContinueOnError)
	fs.StringVar(&f.name, "name", "", "name of the app (default: from the image name)")
	fs.StringVar(&f.exec, "exec", "", "command to run instead of the image's entrypoint")
	fs.StringArrayVar(&f.env, "set-env", nil, "environment variable KEY=VALUE (repeatable)")
	fs.StringVar(&f.user, "user", "", "user (name or uid, optionally :group) to run as (default: the image's)")
	fs.StringVar(&f.group, "group", "", "group (name or gid) to run as")
	fs.StringSliceVar(&f.suppGroups, "supplementary-gids", nil, "additional group ids")
	fs.StringVar(&f.workingDir, "working-dir", "", "working directory (default: the image's)")
	fs.StringVar(&f.stopSignal, "stop-signal", "", "signal that asks the app to stop, before SIGKILL (default: the image's STOPSIGNAL, else SIGTERM)")
	fs.StringArrayVar(&f.mounts, "mount", nil, "mount a volume (volume=NAME,target=PATH[,readOnly=true]) or an image read-only (image=REF,target=PATH[,subPath=DIR]) (repeatable)")
	fs.StringVar(&f.cpu, "cpu", "", "CPU limit, in cores (0.5) or millicores (500m)")
	fs.StringVar(&f.memory, "memory", "", "memory limit, e.g. 64M, 1G, 512Ki")
	fs.Uint64Var(&f.cpuShares, "cpu-shares", 0, "relative CPU weight (cgroup cpu.shares)")
	fs.StringSliceVar(&f.capsRetain, "caps-retain", nil, "keep only these capabilities (e.g. CAP_NET_BIND_SERVICE,CAP_CHOWN)")
	fs.StringSliceVar(&f.capsRemove, "caps-remove", nil, "remove these capabilities from the default set")
	fs.StringSliceVar(&f.capsAdd, "caps-add", nil, "add these capabilities to the default set")
	fs.StringVar(&f.seccomp, "seccomp", "", "seccomp filter: default, unconfined, localhost/PATH, or mode=retain|remove,SYSCALL...")
	fs.BoolVar(&f.readonlyRootfs, "readonly-rootfs", false, "mount the app's root filesystem read-only")
	fs.BoolVar(&f.privileged, "privileged", false, "all capabilities and devices, no seccomp filter")
	fs.BoolVar(&f.noNewPrivs, "no-new-privileges", false, "set no_new_privs")
	fs.IntVar(&f.oomScoreAdj, "oom-score-adj", 0, "oom_score_adj of the app")
	fs.BoolVar(&f.stdin, "stdin", false, "keep the app's stdin open (for attach)")
	fs.BoolVar(&f.tty, "tty", false, "give the app a terminal")
	fs.StringArrayVar(&f.annotations, "user-annotation", nil, "annotation KEY=VALUE (repeatable)")
	fs.StringVar(&f.pid, "pid", "", "PID namespace: pod (default), container (its own), host, or target:APP (another app's)")
	return fs
}

// appOptions converts per-app flags into stage0 options for image; podEnv
// (run's pod-level --set-env) comes before the app's own.
func (f *appFlags) appOptions(image string, podEnv []string, volumes map[string]bool) (stage0.AppOptions, error) {
	o := stage0.AppOptions{
		Name:            f.name,
		Image:           image,
		Args:            f.args,
		Env:             append(append([]string{}, podEnv...), f.env...),
		User:            f.user,
		Group:           f.group,
		WorkingDir:      f.workingDir,
		StopSignal:      f.stopSignal,
		ReadonlyRootfs:  f.readonlyRootfs,
		Privileged:      f.privileged,
		NoNewPrivileges: f.noNewPrivs,
		CapsRetain:      f.capsRetain,
		CapsAdd:         f.capsAdd,
		CapsDrop:        f.capsRemove,
		TTY:             f.tty,
		Stdin:           f.stdin || f.tty,
	}
	if f.exec != "" {
		o.Exec = []string{f.exec}
	}
	for _, kv := range o.Env { // the pod's and the app's
		if !strings.Contains(kv, "=") {
			return o, fmt.Errorf("invalid --set-env %q: want KEY=VALUE", kv)
		}
	}
	for _, g := range f.suppGroups {
		n, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			return o, fmt.Errorf("invalid --supplementary-gids %q: %w", g, err)
		}
		o.SupplementaryGroups = append(o.SupplementaryGroups, uint32(n))
	}
	for _, m := range f.mounts {
		mnt, err := parseMount(m, volumes)
		if err != nil {
			return o, err
		}
		o.Mounts = append(o.Mounts, mnt)
	}
	res, err := f.resources()
	if err != nil {
		return o, err
	}
	o.Resources = res
	if f.oomSet {
		v := f.oomScoreAdj
		o.OOMScoreAdj = &v
	}
	switch {
	case f.pid == "" || f.pid == "pod":
	case f.pid == "container":
		o.PIDMode = stage0.NamespaceContainer
	case f.pid == "host":
		o.PIDMode = stage0.NamespaceNode
	case strings.HasPrefix(f.pid, "target:"):
		o.PIDMode, o.PIDTarget = stage0.NamespaceTarget, strings.TrimPrefix(f.pid, "target:")
	default:
		return o, fmt.Errorf("invalid --pid %q: want pod, container, host or target:APP", f.pid)
	}
	if err := applySeccompFlag(&o, f.seccomp); err != nil {
		return o, err
	}
	if len(f.annotations) > 0 {
		o.Annotations = map[string]string{}
		for _, kv := range f.annotations {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return o, fmt.Errorf("invalid --user-annotation %q: want KEY=VALUE", kv)
			}
			o.Annotations[k] = v
		}
	}
	return o, nil
}

// parseMount parses --mount volume=NAME,target=PATH[,readOnly=true] or
// --mount image=REF,target=PATH[,subPath=DIR] (an image's filesystem,
// read-only).
func parseMount(s string, volumes map[string]bool) (stage0.Mount, error) {
	var m stage0.Mount
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "volume":
			m.Volume = v
		case "image":
			m.Image = v
		case "subPath":
			m.SubPath = v
		case "target":
			m.Destination = v
		case "readOnly", "readonly", "ro":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return m, fmt.Errorf("invalid --mount %q: readOnly: %w", s, err)
			}
			m.ReadOnly = b
		case "propagation":
			m.Propagation = v
		default:
			return m, fmt.Errorf("invalid --mount %q: unknown key %q", s, k)
		}
	}
	if (m.Volume == "") == (m.Image == "") || m.Destination == "" {
		return m, fmt.Errorf("invalid --mount %q: want volume=NAME,target=PATH or image=REF,target=PATH", s)
	}
	if m.Volume != "" && volumes != nil && !volumes[m.Volume] {
		return m, fmt.Errorf("invalid --mount %q: no --volume named %q", s, m.Volume)
	}
	return m, nil
}

// resources converts --cpu, --memory and --cpu-shares.
func (f *appFlags) resources() (*specs.LinuxResources, error) {
	if f.cpu == "" && f.memory == "" && f.cpuShares == 0 {
		return nil, nil
	}
	res := &specs.LinuxResources{}
	if f.cpu != "" {
		milli, err := parseCPU(f.cpu)
		if err != nil {
			return nil, err
		}
		period := uint64(100000)
		quota := milli * int64(period) / 1000
		res.CPU = &specs.LinuxCPU{Period: &period, Quota: &quota}
	}
	if f.cpuShares > 0 {
		if res.CPU == nil {
			res.CPU = &specs.LinuxCPU{}
		}
		shares := f.cpuShares
		res.CPU.Shares = &shares
	}
	if f.memory != "" {
		b, err := parseBytes(f.memory)
		if err != nil {
			return nil, fmt.Errorf("invalid --memory %q: %w", f.memory, err)
		}
		res.Memory = &specs.LinuxMemory{Limit: &b}
	}
	return res, nil
}

// parseCPU parses "500m" or "0.5" into millicores.
func parseCPU(s string) (int64, error) {
	if m, ok := strings.CutSuffix(s, "m"); ok {
		n, err := strconv.ParseInt(m, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("invalid --cpu %q", s)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("invalid --cpu %q", s)
	}
	return int64(math.Round(f * 1000)), nil
}

// parseBytes parses sizes like 64M, 1G, 512Ki, 1000000.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{
		{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"B", 1}, {"", 1},
	}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			n, err := strconv.ParseFloat(num, 64)
			if err != nil || n <= 0 {
				continue
			}
			return int64(n * float64(u.mult)), nil
		}
	}
	return 0, fmt.Errorf("not a size")
}

// applySeccompFlag handles --seccomp: a profile name, or rkt's
// mode=retain|remove,SYSCALL... form.
func applySeccompFlag(o *stage0.AppOptions, s string) error {
	if s == "" {
		return nil
	}
	if !strings.HasPrefix(s, "mode=") {
		if s == "default" {
			s = stage0.SeccompDefault
		}
		o.Seccomp = s
		return nil
	}
	parts := strings.Split(s, ",")
	mode := strings.TrimPrefix(parts[0], "mode=")
	var syscalls []string
	errno := uint(1) // EPERM
	for _, p := range parts[1:] {
		if e, ok := strings.CutPrefix(p, "errno="); ok {
			n, ok := errnoNames[e]
			if !ok {
				return fmt.Errorf("invalid --seccomp %q: unknown errno %q", s, e)
			}
			errno = n
			continue
		}
		if p != "" {
			syscalls = append(syscalls, p)
		}
	}
	if len(syscalls) == 0 {
		return fmt.Errorf("invalid --seccomp %q: no syscalls", s)
	}
	switch mode {
	case "retain":
		o.SeccompSpec = &specs.LinuxSeccomp{
			DefaultAction: specs.ActErrno, DefaultErrnoRet: &errno,
			Syscalls: []specs.LinuxSyscall{{Names: syscalls, Action: specs.ActAllow}},
		}
	case "remove":
		o.SeccompSpec = &specs.LinuxSeccomp{
			DefaultAction: specs.ActAllow,
			Syscalls:      []specs.LinuxSyscall{{Names: syscalls, Action: specs.ActErrno, ErrnoRet: &errno}},
		}
	default:
		return fmt.Errorf("invalid --seccomp %q: mode must be retain or remove", s)
	}
	return nil
}

var errnoNames = map[string]uint{"EPERM": 1, "ENOENT": 2, "EACCES": 13, "ENOSYS": 38, "ENOTSUP": 95, "EOPNOTSUPP": 95}
