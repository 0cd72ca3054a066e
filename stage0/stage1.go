package stage0

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rkt/rkt/networking"
	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/lock"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

type stage1Mode string

const (
	modeRun     stage1Mode = "run"
	modeSandbox stage1Mode = "sandbox"
)

// stage1ReadyTimeout bounds the wait for a starting stage1 when the caller
// gave no deadline.
const stage1ReadyTimeout = 2 * time.Minute

// orphanWait bounds the wait for the host's init to reap the apps of a
// killed supervisor.
const orphanWait = 5 * time.Second

// stage1StopWait bounds the wait for a supervisor stopped with SIGTERM
// before it is killed.
const stage1StopWait = 10 * time.Second

// stage1Proc is a supervisor that started and reported ready.
type stage1Proc struct {
	cmd    *exec.Cmd
	exited <-chan struct{}
}

// stop ends the supervisor of a pod that failed to start after it was
// ready: SIGTERM (it releases what it holds), SIGKILL if it lingers.
func (s *stage1Proc) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return
	case <-time.After(stage1StopWait):
	}
	s.cmd.Process.Kill()
	<-s.exited
}

// startStage1 starts the pod's supervisor, handing it the pod lock (fd 3)
// and a readiness pipe (fd 4), and waits until it is ready.
func (r *Runtime) startStage1(ctx context.Context, p *pod, pm *schema.PodManifest, l *lock.FileLock, mode stage1Mode) (*stage1Proc, error) {
	logf, err := fileperm.OpenFile(p.layout().Stage1Log(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, fileperm.Shared)
	if err != nil {
		return nil, fmt.Errorf("cannot create the stage1 log of pod %s: %w", p.uuid, err)
	}
	defer logf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("cannot create the readiness pipe: %w", err)
	}
	defer pr.Close()
	args := []string{"run", "--pod-dir=" + p.dir, "--mode=" + string(mode)}
	if r.cfg.Debug {
		args = append(args, "--debug")
	}
	cmd := exec.Command(r.cfg.Stage1Path, args...)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{l.File(), pw}
	flags := uintptr(syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC)
	if pm.HostIPC {
		flags = syscall.CLONE_NEWUTS
	}
	pidfd := -1
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Cloneflags: flags, PidFD: &pidfd}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return nil, fmt.Errorf("cannot start stage1 %q for pod %s: %w", r.cfg.Stage1Path, p.uuid, err)
	}
	r.log.Debug("stage1 started", "pod", p.uuid, "pid", cmd.Process.Pid)
	exited := reapWhenExited(cmd, pidfd) // reap it if it exits while we live

	ready := make(chan error, 1)
	go func() { ready <- control.WaitReady(pr) }()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, stage1ReadyTimeout)
		defer cancel()
	}
	select {
	case err := <-ready:
		if err != nil {
			<-exited
			return nil, fmt.Errorf("pod %s: %w%s", p.uuid, err, logTail(p))
		}
		go func() {
			<-exited
			// killed, or crashed: its apps' ends are recorded now, when
			// it died, not when someone next looks
			recordSupervisorDeath(p)
		}()
		return &stage1Proc{cmd: cmd, exited: exited}, nil
	case <-ctx.Done():
		cmd.Process.Kill()
		<-exited
		return nil, fmt.Errorf("pod %s: waiting for stage1: %w", p.uuid, ctx.Err())
	}
}

// logTail returns the end of stage1.log for error messages.
func logTail(p *pod) string {
	b, err := os.ReadFile(p.layout().Stage1Log())
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "; stage1.log: " + strings.TrimSpace(string(b))
}

// stage1PID reads the supervisor's pid file (0 if absent).
func stage1PID(p *pod) int {
	b, err := os.ReadFile(p.layout().Stage1PID())
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// cleanup releases what an exited (unlocked, or locked by us) pod still
// holds: leftover app processes, containers and cgroups (`stage1 gc`), app
// rootfs mounts, and its network. It is idempotent and marks the pod clean.
func (r *Runtime) cleanup(ctx context.Context, p *pod) error {
	if _, err := os.Stat(p.layout().Cleaned()); err == nil {
		return nil
	}
	var errs []error
	// A supervisor that exited cleanly released the processes, containers
	// and cgroups itself; a dead one left them to `stage1 gc`.
	if _, err := os.Stat(p.layout().Stage1Clean()); err != nil {
		if _, err := os.Stat(p.layout().Manifest()); err == nil {
			gctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			out, err := exec.CommandContext(gctx, r.cfg.Stage1Path, "gc", "--pod-dir="+p.dir).CombinedOutput()
			cancel()
			if err != nil {
				errs = append(errs, fmt.Errorf("stage1 gc of pod %s: %w: %s", p.uuid, err, strings.TrimSpace(string(out))))
			}
		}
		if pm, err := p.readManifest(); err == nil {
			if left := waitPodProcesses(ctx, pm.CgroupParent, p.uuid, orphanWait); len(left) > 0 {
				r.log.Warn("processes are still in the pod's cgroups", "pod", p.uuid, "pids", left)
			}
		}
	}
	if err := networking.Teardown(ctx, r.cfg.Net, p.dir); err != nil {
		errs = append(errs, fmt.Errorf("cannot tear down the network of pod %s: %w", p.uuid, err))
	}
	if err := unmountUnder(p.dir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := fileperm.WriteFile(p.layout().Cleaned(), nil, fileperm.Shared); err != nil {
		return fmt.Errorf("cannot mark pod %s clean: %w", p.uuid, err)
	}
	return nil
}
