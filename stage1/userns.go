package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/pkg/sysctl"
)

// The IPC and UTS namespaces of a pod with a user namespace, owned by it.
const (
	userNSIPCFile = "ipcns"
	userNSUTSFile = "utsns"
)

// createUserNS is `stage1 userns --pod-dir=DIR [--netns=PATH]`: it creates
// the pod's user namespace with the mappings of PodManifest.UserNS and
// bind-mounts it at <pod>/userns, where stage0 (idmapped rootfs) and the
// supervisor (apps join it) find it. The namespace lives as long as that
// mount. With netns it also creates the pod's network namespace, owned by
// the user namespace (so that its apps may mount their sysfs), with
// loopback up, and bind-mounts it at netns (for networking to configure).
// Idempotent for the user namespace.
func createUserNS(podDir, netns string) error {
	b, err := os.ReadFile(schema.PodDir(podDir).Manifest())
	if err != nil {
		return fmt.Errorf("cannot read the pod manifest: %w", err)
	}
	var m schema.PodManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("cannot parse the pod manifest: %w", err)
	}
	if m.UserNS == nil {
		return fmt.Errorf("pod %s has no user namespace mappings", m.UUID)
	}
	target := schema.PodDir(podDir).UserNS()
	if mounted, err := mountinfo.Mounted(target); err == nil && mounted {
		if netns == "" {
			return nil
		}
		return fmt.Errorf("pod %s already has a user namespace: its network namespace must be created with it", m.UUID)
	}
	// The namespace needs a process to exist until it is bind-mounted: a
	// child in the new namespace that waits for its stdin to close. Go
	// writes its uid/gid maps before it runs.
	cmd := exec.Command("/proc/self/exe", "userns-hold")
	// IPC and UTS namespaces owned by the user namespace let the apps
	// mount their mqueue; the holder sets the hostname and sysctls there.
	flags := uintptr(syscall.CLONE_NEWUSER)
	if !m.HostIPC {
		flags |= syscall.CLONE_NEWIPC
	}
	if m.Net != "host" {
		flags |= syscall.CLONE_NEWUTS
	}
	if netns != "" {
		flags |= syscall.CLONE_NEWNET
		cmd.Args = append(cmd.Args, "--loopback")
	}
	cmd.Args = append(cmd.Args, holderArgs(&m, flags)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  flags,
		UidMappings: sysProcIDMap(m.UserNS.UIDMappings),
		GidMappings: sysProcIDMap(m.UserNS.GIDMappings),
		// root of the namespace (the host's root is not mapped in it), to
		// own what it creates there
		Credential: &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true},
		Pdeathsig:  syscall.SIGKILL,
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("cannot create the user namespace holder's stdin: %w", err)
	}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("cannot create the user namespace holder's stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot create the user namespace of pod %s: %w", m.UUID, err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	// The holder says "ok" once its namespaces are ready (loopback up).
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "ok\n" {
		return fmt.Errorf("the namespace holder of pod %s failed: %q %v", m.UUID, line, err)
	}
	if mounted, err := mountinfo.Mounted(target); err != nil || !mounted {
		binds := map[string]string{"user": target}
		if flags&syscall.CLONE_NEWIPC != 0 {
			binds["ipc"] = filepath.Join(podDir, userNSIPCFile)
		}
		if flags&syscall.CLONE_NEWUTS != 0 {
			binds["uts"] = filepath.Join(podDir, userNSUTSFile)
		}
		for kind, path := range binds {
			if err := bindNS(cmd.Process.Pid, kind, path); err != nil {
				return fmt.Errorf("pod %s: %w", m.UUID, err)
			}
		}
	}
	if netns != "" {
		if err := bindNS(cmd.Process.Pid, "net", netns); err != nil {
			return fmt.Errorf("pod %s: %w", m.UUID, err)
		}
	}
	return nil
}

// bindNS bind-mounts namespace kind of process pid at target (created).
func bindNS(pid int, kind, target string) error {
	f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("cannot create %q: %w", target, err)
	}
	f.Close()
	src := fmt.Sprintf("/proc/%d/ns/%s", pid, kind)
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		os.Remove(target)
		return fmt.Errorf("cannot bind-mount the %s namespace at %q: %w", kind, target, err)
	}
	return nil
}

// runUserNSHolder is `stage1 userns-hold [--loopback] [--hostname=NAME]
// [--sysctl=KEY=VALUE...]`: set up its new namespaces, say "ok", wait until
// stdin closes.
func runUserNSHolder() int {
	if err := holderSetup(os.Args[2:]); err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("ok")
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil && !errors.Is(err, os.ErrClosed) {
		return 1
	}
	return 0
}

// loopbackUp sets "lo" up in this process's network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot open a socket to set lo up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("cannot read the flags of lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("cannot set lo up: %w", err)
	}
	return nil
}

func sysProcIDMap(m []specs.LinuxIDMapping) []syscall.SysProcIDMap {
	out := make([]syscall.SysProcIDMap, 0, len(m))
	for _, e := range m {
		out = append(out, syscall.SysProcIDMap{ContainerID: int(e.ContainerID), HostID: int(e.HostID), Size: int(e.Size)})
	}
	return out
}

// userNSPath is the pod's user namespace when it has one, else "".
func userNSPath(podDir string, m *schema.PodManifest) (string, error) {
	if m.UserNS == nil {
		return "", nil
	}
	p := schema.PodDir(podDir).UserNS()
	if mounted, err := mountinfo.Mounted(p); err != nil || !mounted {
		return "", fmt.Errorf("pod %s has user namespace mappings but no %s", m.UUID, p)
	}
	return p, nil
}

// userNSPodNamespaces points the pod's IPC and UTS namespaces at those
// created with its user namespace, where the holder already set the
// hostname and the ipc/uts sysctls, and sets the net sysctls.
func (sv *supervisor) userNSPodNamespaces(m *schema.PodManifest) error {
	ipc, uts := filepath.Join(sv.podDir, userNSIPCFile), filepath.Join(sv.podDir, userNSUTSFile)
	ownIPC, _ := mountinfo.Mounted(ipc)
	ownUTS, _ := mountinfo.Mounted(uts)
	if ownIPC {
		sv.namespaces.ipc = ipc
	}
	if ownUTS {
		sv.namespaces.uts = uts
	} else if err := setHostname(m.Hostname); err != nil {
		return err
	}
	rest := map[string]string{}
	for k, v := range m.Sysctls {
		switch kind := sysctl.Namespace(k); {
		case kind == "ipc" && ownIPC, kind == "uts" && ownUTS:
			// set by the holder, as the namespaces' root
		default:
			rest[k] = v
		}
	}
	return applySysctls(rest, sv.namespaces.net)
}

// holderArgs are the settings the namespace holder applies in the IPC and
// UTS namespaces it creates (as their root: the host's root may not write
// their ipc sysctls without CAP_SYS_RESOURCE).
func holderArgs(m *schema.PodManifest, flags uintptr) []string {
	var args []string
	if flags&syscall.CLONE_NEWUTS != 0 && m.Hostname != "" {
		args = append(args, "--hostname="+m.Hostname)
	}
	keys := make([]string, 0, len(m.Sysctls))
	for k := range m.Sysctls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kind := sysctl.Namespace(k)
		if (kind == "ipc" && flags&syscall.CLONE_NEWIPC != 0) || (kind == "uts" && flags&syscall.CLONE_NEWUTS != 0) {
			args = append(args, "--sysctl="+k+"="+m.Sysctls[k])
		}
	}
	return args
}

// holderSetup applies the holder's arguments: --loopback, --hostname=NAME,
// --sysctl=KEY=VALUE.
func holderSetup(args []string) error {
	for _, a := range args {
		switch {
		case a == "--loopback":
			if err := loopbackUp(); err != nil {
				return err
			}
		case strings.HasPrefix(a, "--hostname="):
			name := strings.TrimPrefix(a, "--hostname=")
			if err := unix.Sethostname([]byte(name)); err != nil {
				return fmt.Errorf("cannot set hostname %q: %w", name, err)
			}
		case strings.HasPrefix(a, "--sysctl="):
			k, v, _ := strings.Cut(strings.TrimPrefix(a, "--sysctl="), "=")
			if err := os.WriteFile(sysctl.Path(k), []byte(v), 0o644); err != nil {
				return fmt.Errorf("cannot set sysctl %q: %w", k, err)
			}
		default:
			return fmt.Errorf("unknown argument %q", a)
		}
	}
	return nil
}
