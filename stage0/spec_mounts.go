package stage0

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
)

// Files stage0 writes in the pod directory and bind-mounts into every app.
const (
	podHostsFile    = "hosts"
	podHostnameFile = "hostname"
	podResolvFile   = "resolv.conf"
)

var defaultMaskedPaths = []string{
	"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
	"/sys/firmware", "/sys/devices/virtual/powercap",
}

var defaultReadonlyPaths = []string{
	"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
}

func pathsOrDefault(p, def []string) []string {
	if p == nil {
		return append([]string{}, def...)
	}
	return append([]string{}, p...)
}

// defaultMounts are the kernel filesystems every app gets.
func defaultMounts(privileged bool) []specs.Mount {
	sysOpts := []string{"nosuid", "noexec", "nodev", "ro"}
	cgOpts := []string{"nosuid", "noexec", "nodev", "relatime", "ro"}
	if privileged {
		sysOpts = sysOpts[:3]
		cgOpts = cgOpts[:4]
	}
	return []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: sysOpts},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: cgOpts},
	}
}

// addMounts adds the default mounts, the pod's /etc files and the app's
// mounts; a later mount on the same destination replaces an earlier one.
func addMounts(s *specs.Spec, in specInput) error {
	o := in.opts
	mounts := defaultMounts(o.Privileged)
	switch {
	case in.pod.HostIPC:
		mounts[3] = specs.Mount{Destination: "/dev/shm", Type: "bind", Source: "/dev/shm", Options: []string{"rbind", "nosuid", "noexec", "nodev"}}
	case in.pod.SharedShm:
		// the pod's, as the apps share its IPC namespace (POSIX shared
		// memory lives in /dev/shm), as containerd and CRI-O bind theirs
		mounts[3] = specs.Mount{Destination: "/dev/shm", Type: "bind", Source: schema.PodDir(in.podDir).Shm(), Options: []string{"rbind", "nosuid", "noexec", "nodev"}}
	}
	// the pod's /etc files and the app's mounts, sorted below
	var appMounts []specs.Mount
	etcOpts := []string{"rbind", "rprivate"}
	if o.ReadonlyRootfs {
		// as containerd mounts them: shared by the pod's apps, they are
		// no more writable than the app's root
		etcOpts = append(etcOpts, "ro")
	}
	for _, f := range []struct{ name, dst string }{
		{podHostsFile, "/etc/hosts"}, {podHostnameFile, "/etc/hostname"}, {podResolvFile, "/etc/resolv.conf"},
	} {
		appMounts = append(appMounts, specs.Mount{Destination: f.dst, Type: "bind", Source: filepath.Join(in.podDir, f.name), Options: etcOpts})
	}
	propagation := ""
	for i, m := range o.Mounts {
		if m.Image != "" {
			src, ok := in.imageMounts[i]
			if !ok {
				return fmt.Errorf("image volume %q on %q is not mounted", m.Image, m.Destination)
			}
			m = Mount{Source: src, Destination: m.Destination, ReadOnly: true, Propagation: m.Propagation}
		}
		sm, err := appMount(in, m)
		if err != nil {
			return err
		}
		switch m.Propagation {
		case "rshared":
			propagation = "rshared"
		case "rslave":
			if propagation == "" {
				propagation = "rslave"
			}
		}
		appMounts = append(appMounts, sm)
	}
	// Parents before what is mounted below them, whatever the request's
	// order, as containerd and CRI-O sort the CRI mounts with their
	// /etc files (stable: the last of one destination still wins, and a
	// volume on /etc does not hide the pod's /etc/hosts).
	sort.SliceStable(appMounts, func(i, j int) bool {
		return pathDepth(appMounts[i].Destination) < pathDepth(appMounts[j].Destination)
	})
	mounts = append(mounts, appMounts...)
	if propagation != "" {
		s.Linux.RootfsPropagation = propagation
	}
	// the last mount of a destination wins
	last := make(map[string]int, len(mounts))
	for i, m := range mounts {
		last[filepath.Clean(m.Destination)] = i
	}
	out := make([]specs.Mount, 0, len(last))
	for i, m := range mounts {
		if last[filepath.Clean(m.Destination)] == i {
			out = append(out, m)
		}
	}
	s.Mounts = out
	return nil
}

// pathDepth is the number of components of an absolute path.
func pathDepth(p string) int {
	p = filepath.Clean(p)
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// appMount converts one Mount of AppOptions.
func appMount(in specInput, m Mount) (specs.Mount, error) {
	if !filepath.IsAbs(m.Destination) {
		return specs.Mount{}, fmt.Errorf("mount destination %q is not absolute: %w", m.Destination, ErrInvalid)
	}
	src := m.Source
	typ := m.Type
	readOnly := m.ReadOnly
	internal := false // a directory of the pod: no symlinks to follow
	if m.Volume != "" {
		v, ok := findVolume(in.pod.Volumes, m.Volume)
		if !ok {
			return specs.Mount{}, fmt.Errorf("mount on %q: pod has no volume %q: %w", m.Destination, m.Volume, ErrInvalid)
		}
		readOnly = readOnly || v.ReadOnly
		switch v.Kind {
		case "host":
			src = v.Source
		case "empty", "":
			src = schema.PodDir(in.podDir).Volume(v.Name)
			internal = true
		default:
			return specs.Mount{}, fmt.Errorf("volume %q: unknown kind %q: %w", v.Name, v.Kind, ErrInvalid)
		}
		typ = ""
	}
	opts := append([]string{}, m.Options...)
	if typ == "" || typ == "bind" {
		if !filepath.IsAbs(src) {
			return specs.Mount{}, fmt.Errorf("mount on %q: host path %q is not absolute: %w", m.Destination, src, ErrInvalid)
		}
		if !internal {
			// follow symlinks on the host, as the kubelet expects
			resolved, err := filepath.EvalSymlinks(src)
			if err != nil {
				return specs.Mount{}, fmt.Errorf("mount on %q: cannot resolve host path %q: %w", m.Destination, src, err)
			}
			src = resolved
		}
		typ = "bind"
		opts = append(opts, "rbind")
	}
	switch m.Propagation {
	case "", "private", "rprivate":
		opts = append(opts, "rprivate")
	case "rslave", "slave":
		opts = append(opts, "rslave")
	case "rshared", "shared":
		opts = append(opts, "rshared")
	default:
		return specs.Mount{}, fmt.Errorf("mount on %q: unknown propagation %q: %w", m.Destination, m.Propagation, ErrInvalid)
	}
	if readOnly {
		opts = append(opts, "ro")
		if m.RecursiveReadOnly {
			opts = append(opts, "rro")
		}
	} else if m.RecursiveReadOnly {
		return specs.Mount{}, fmt.Errorf("mount on %q: recursive read-only needs read-only: %w", m.Destination, ErrInvalid)
	}
	return specs.Mount{Destination: m.Destination, Type: typ, Source: src, Options: opts}, nil
}

func findVolume(vols []schema.Volume, name string) (schema.Volume, bool) {
	for _, v := range vols {
		if v.Name == name {
			return v, true
		}
	}
	return schema.Volume{}, false
}

// addDevices exposes host devices: the requested ones, or every host device
// for a privileged app.
func addDevices(s *specs.Spec, o AppOptions) error {
	res := s.Linux.Resources
	if o.Privileged {
		res.Devices = []specs.LinuxDeviceCgroup{{Allow: true, Access: "rwm"}}
		devs, err := hostDevices()
		if err != nil {
			return err
		}
		s.Linux.Devices = devs
	} else {
		res.Devices = append([]specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}, res.Devices...)
	}
	for _, d := range o.Devices {
		dev, err := deviceFromPath(d.HostPath)
		if err != nil {
			return err
		}
		if d.ContainerPath != "" {
			dev.Path = d.ContainerPath
		}
		perms := d.Permissions
		if perms == "" {
			perms = "rwm"
		}
		s.Linux.Devices = append(s.Linux.Devices, dev)
		major, minor := dev.Major, dev.Minor
		res.Devices = append(res.Devices, specs.LinuxDeviceCgroup{Allow: true, Type: dev.Type, Major: &major, Minor: &minor, Access: perms})
	}
	return nil
}

// deviceFromPath describes the host device at path (symlinks followed).
func deviceFromPath(path string) (specs.LinuxDevice, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return specs.LinuxDevice{}, fmt.Errorf("cannot resolve device %q: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(real, &st); err != nil {
		return specs.LinuxDevice{}, fmt.Errorf("cannot stat device %q: %w", path, err)
	}
	var typ string
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		typ = "c"
	case unix.S_IFBLK:
		typ = "b"
	default:
		return specs.LinuxDevice{}, fmt.Errorf("%q is not a device: %w", path, ErrInvalid)
	}
	mode := os.FileMode(st.Mode & 0o777)
	uid, gid := st.Uid, st.Gid
	return specs.LinuxDevice{
		Path: path, Type: typ,
		Major: int64(unix.Major(uint64(st.Rdev))), Minor: int64(unix.Minor(uint64(st.Rdev))),
		FileMode: &mode, UID: &uid, GID: &gid,
	}, nil
}

// hostDevices lists the host's device nodes under /dev (not /dev/pts etc.),
// for privileged apps.
func hostDevices() ([]specs.LinuxDevice, error) {
	var out []specs.LinuxDevice
	err := filepath.WalkDir("/dev", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			switch p {
			case "/dev/pts", "/dev/shm", "/dev/mqueue", "/dev/fd":
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&(os.ModeDevice|os.ModeCharDevice) == 0 || strings.HasPrefix(p, "/dev/console") || p == "/dev/ptmx" {
			return nil
		}
		dev, err := deviceFromPath(p)
		if err == nil {
			out = append(out, dev)
		}
		return nil
	})
	return out, err
}

// checkLSM refuses AppArmor/SELinux settings the host cannot apply.
func checkLSM(o AppOptions) error {
	switch o.ApparmorProfile {
	case "", "unconfined", "runtime/default":
	default:
		if b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled"); err != nil || strings.TrimSpace(string(b)) != "Y" {
			return fmt.Errorf("AppArmor profile %q requested but AppArmor is not enabled on this host: %w", o.ApparmorProfile, ErrInvalid)
		}
		return fmt.Errorf("AppArmor profile %q: AppArmor profiles are not supported by this runtime: %w", o.ApparmorProfile, ErrInvalid)
	}
	// Without SELinux on the host a label means nothing and is ignored, as
	// containerd and CRI-O do (the kubelet sends level s0 on many pods).
	if o.SelinuxLabel != "" {
		if _, err := os.Stat("/sys/fs/selinux/enforce"); err == nil {
			return fmt.Errorf("SELinux label %q: SELinux labels are not supported by this runtime: %w", o.SelinuxLabel, ErrInvalid)
		}
	}
	return nil
}
