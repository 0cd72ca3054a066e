package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
)

// createUserNS is `stage1 userns --pod-dir=DIR`: it creates the pod's user
// namespace with the mappings of PodManifest.UserNS and bind-mounts it at
// <pod>/userns, where stage0 (idmapped rootfs) and the supervisor (apps
// join it) find it. The namespace lives as long as that mount. Idempotent.
func createUserNS(podDir string) error {
	b, err := os.ReadFile(filepath.Join(podDir, schema.PodManifestFile))
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
	target := filepath.Join(podDir, schema.UserNSFile)
	if mounted, err := mountinfo.Mounted(target); err == nil && mounted {
		return nil
	}
	// The namespace needs a process to exist until it is bind-mounted: a
	// child in the new namespace that waits for its stdin to close. Go
	// writes its uid/gid maps before it runs.
	cmd := exec.Command("/proc/self/exe", "userns-hold")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: sysProcIDMap(m.UserNS.UIDMappings),
		GidMappings: sysProcIDMap(m.UserNS.GIDMappings),
		Pdeathsig:   syscall.SIGKILL,
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("cannot create the user namespace holder's stdin: %w", err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot create the user namespace of pod %s: %w", m.UUID, err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("cannot create %q: %w", target, err)
	}
	f.Close()
	src := fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid)
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		os.Remove(target)
		return fmt.Errorf("cannot bind-mount the user namespace of pod %s at %q: %w", m.UUID, target, err)
	}
	return nil
}

// runUserNSHolder is `stage1 userns-hold`: wait until stdin closes.
func runUserNSHolder() int {
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil && !errors.Is(err, os.ErrClosed) {
		return 1
	}
	return 0
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
	p := filepath.Join(podDir, schema.UserNSFile)
	if mounted, err := mountinfo.Mounted(p); err != nil || !mounted {
		return "", fmt.Errorf("pod %s has user namespace mappings but no %s in its directory", m.UUID, schema.UserNSFile)
	}
	return p, nil
}
