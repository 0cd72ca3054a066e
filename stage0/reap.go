package stage0

import (
	"errors"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

// reapWhenExited reaps cmd's process once it exits and returns a channel
// closed then. A detached stage1 lives as long as its pod, and waiting for
// it with cmd.Wait would block an OS thread in waitid for all that time:
// one thread per pod, kept by the Go runtime after the pods are gone. So
// the wait is on the process's pidfd in the runtime's poller, which holds
// no thread; only without a pollable pidfd does it fall back to cmd.Wait.
// pidfd (from SysProcAttr.PidFD) is owned, and closed, by the reaper.
func reapWhenExited(cmd *exec.Cmd, pidfd int) <-chan struct{} {
	done := make(chan struct{})
	if pidfd < 0 {
		go func() { cmd.Wait(); close(done) }()
		return done
	}
	var f *os.File
	if err := unix.SetNonblock(pidfd, true); err == nil {
		f = os.NewFile(uintptr(pidfd), "pidfd")
	} else {
		unix.Close(pidfd)
	}
	go func() {
		defer close(done)
		if f != nil {
			defer f.Close()
			if waitPidfd(f) {
				cmd.Process.Release()
				return
			}
		}
		cmd.Wait()
	}()
	return done
}

// waitPidfd waits in the poller until the process of the pidfd f exited,
// and reaps it. It reports false when it could not (f is not pollable).
func waitPidfd(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	reaped := false
	rc.Read(func(fd uintptr) bool {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			return false // still running: wait for the pidfd to be readable
		case err == nil && info.Signo == 0:
			return false // still running (WNOHANG on a blocking pidfd)
		}
		reaped = err == nil
		return true
	})
	return reaped
}
