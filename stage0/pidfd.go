package stage0

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// openSupervisorPidfd returns a pidfd of the pod's running stage1, or -1.
func openSupervisorPidfd(p *pod) int {
	pid := stage1PID(p)
	if pid <= 0 {
		return -1
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return -1
	}
	if !supervisorAlive(p, pid) { // checked after the open: the fd is that process
		unix.Close(fd)
		return -1
	}
	return fd
}

// waitProcessExit waits, woken by the kernel (epoll on the pidfd), until the
// process exits or ctx ends; it closes pidfd.
func waitProcessExit(ctx context.Context, pidfd int) error {
	f := os.NewFile(uintptr(pidfd), "pidfd")
	defer f.Close()
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		return fmt.Errorf("cannot poll a pidfd: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Now()) })
	defer stop()
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("cannot poll a pidfd: %w", err)
	}
	err = rc.Read(func(fd uintptr) bool {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return n > 0 || (err != nil && err != unix.EINTR)
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
