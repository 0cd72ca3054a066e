package stage0

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// UserNSSupported reports (nil) whether pods may have a user namespace on
// this host: the kernel creates one with a mapping and supports idmapped
// mounts on the filesystem of the data directory (image layers, pods).
// It starts `stage1 userns-hold` in a scratch user namespace for a moment.
func (r *Runtime) UserNSSupported(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, r.cfg.Stage1Path, "userns-hold")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 65536, Size: 65536}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 65536, Size: 65536}},
		Pdeathsig:   syscall.SIGKILL,
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("cannot probe user namespaces: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot create a user namespace: %w", err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	if err != nil {
		return fmt.Errorf("cannot open the probe's user namespace: %w", err)
	}
	defer ns.Close()
	fd, err := unix.OpenTree(unix.AT_FDCWD, r.cfg.DataDir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("cannot clone mount %q: %w", r.cfg.DataDir, err)
	}
	defer unix.Close(fd)
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(ns.Fd())}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, attr); err != nil {
		return fmt.Errorf("the filesystem of %q does not support idmapped mounts: %w", r.cfg.DataDir, err)
	}
	return nil
}
