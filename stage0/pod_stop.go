package stage0

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/lock"
	"github.com/rkt/rkt/stage1/control"
)

// supervisorExitTimeout bounds the wait for stage1 to exit beyond the apps'
// grace period.
const supervisorExitTimeout = 30 * time.Second

func (r *Runtime) stop(ctx context.Context, uuid string, opts StopOptions) error {
	p, st, err := r.findPodState(uuid)
	if err != nil {
		return err
	}
	switch st {
	case PodRunning:
		if err := r.stopSupervisor(ctx, p, opts); err != nil {
			return err
		}
	case PodExited:
	case PodPrepared, PodPreparing, PodAbortedPrepare, PodEmbryo:
		return fmt.Errorf("pod %s is %s: %w", p.uuid, st, ErrNotRunning)
	default:
		return nil // exited garbage or garbage: already stopped and released
	}
	l, err := lock.Exclusive(ctx, p.dir, lock.Dir)
	if err != nil {
		return fmt.Errorf("pod %s: waiting for stage1 to exit: %w", p.uuid, err)
	}
	defer l.Close()
	if p, err = r.refind(p); err != nil {
		return err
	}
	if p.state != dirRun {
		return nil
	}
	return r.cleanup(ctx, p)
}

// stopSupervisor asks stage1 to stop its apps and exit (or kills it with
// Force) and waits until it released the pod lock.
func (r *Runtime) stopSupervisor(ctx context.Context, p *pod, opts StopOptions) error {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = defaultStopTimeout
	}
	pidfd := openSupervisorPidfd(p)
	killed := false
	if !opts.Force {
		c, err := control.Dial(p.dir)
		if err == nil {
			sctx, cancel := context.WithTimeout(ctx, timeout+supervisorExitTimeout)
			err = c.Shutdown(sctx, timeout)
			cancel()
		}
		if err != nil && ctx.Err() != nil {
			if pidfd >= 0 {
				unix.Close(pidfd)
			}
			return fmt.Errorf("cannot stop pod %s: %w", p.uuid, err)
		}
		if err != nil {
			r.log.Warn("pod shutdown failed; killing stage1", "pod", p.uuid, "error", err)
			killed = r.killSupervisor(p)
		}
	} else {
		killed = r.killSupervisor(p)
	}
	wctx, cancel := context.WithTimeout(ctx, supervisorExitTimeout)
	defer cancel()
	if pidfd >= 0 {
		// woken by its exit, which releases the lock, instead of polling it
		if err := waitProcessExit(wctx, pidfd); err != nil {
			r.log.Warn("cannot wait for stage1 to exit", "pod", p.uuid, "error", err)
		}
	}
	l, err := lock.Exclusive(wctx, p.dir, lock.Dir)
	if err != nil && !killed {
		r.killSupervisor(p)
		l, err = lock.Exclusive(wctx, p.dir, lock.Dir)
	}
	if err != nil {
		return fmt.Errorf("pod %s: stage1 did not exit: %w", p.uuid, err)
	}
	return l.Close()
}

// supervisorAlive reports whether pid is this pod's stage1 (not a zombie,
// not a reused pid): its --pod-dir names the pod's directory, by the same
// path or by another name of it (the data dir given through a symlink).
func supervisorAlive(p *pod, pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	for _, arg := range strings.Split(string(cmdline), "\x00") {
		dir, ok := strings.CutPrefix(arg, "--pod-dir=")
		if !ok {
			continue
		}
		if dir == p.dir {
			return true
		}
		its, err := os.Stat(dir)
		if err != nil {
			continue
		}
		if ours, err := os.Stat(p.dir); err == nil && os.SameFile(its, ours) {
			return true
		}
	}
	return false
}

// killSupervisor SIGKILLs the pod's stage1; its apps die with it.
func (r *Runtime) killSupervisor(p *pod) bool {
	pid := stage1PID(p)
	if pid <= 0 {
		return false
	}
	if !supervisorAlive(p, pid) {
		return false // gone, or the pid was reused
	}
	err := syscall.Kill(pid, syscall.SIGKILL)
	return err == nil || errors.Is(err, syscall.ESRCH)
}

func (r *Runtime) remove(ctx context.Context, uuid string, force bool) error {
	p, st, err := r.findPodState(uuid)
	if err != nil {
		return err
	}
	switch st {
	case PodRunning:
		if !force {
			return fmt.Errorf("pod %s is running: stop it first: %w", p.uuid, ErrInvalidState)
		}
		if err := r.stop(ctx, p.uuid, StopOptions{}); err != nil {
			return err
		}
	case PodPreparing, PodDeleting:
		return fmt.Errorf("pod %s is %s: %w", p.uuid, st, ErrInvalidState)
	}
	if p, err = r.refind(p); err != nil {
		return err
	}
	l, err := lockIdle(ctx, p)
	if err != nil {
		return err
	}
	defer l.Close()
	if p, err = r.refind(p); err != nil {
		return err
	}
	return r.destroy(ctx, p)
}

// destroy releases a locked pod's resources, moves it to garbage and
// deletes it.
func (r *Runtime) destroy(ctx context.Context, p *pod) error {
	r.waitRemovals(p.uuid)
	if p.state != dirPrepared {
		if err := r.cleanup(ctx, p); err != nil {
			return err
		}
	}
	if p.state != dirGarbage {
		if err := r.move(p, dirGarbage); err != nil {
			return err
		}
	}
	return removePodDir(p.dir)
}
