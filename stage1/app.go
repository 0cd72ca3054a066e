package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs/validate"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

// app is one app of the pod as the supervisor runs it.
type app struct {
	sv   *supervisor
	name string

	mu        sync.Mutex
	manifest  schema.App
	spec      *specs.Spec     // nil after a refresh until needed (appSpec)
	resources json.RawMessage // the resources of the last update, kept across refreshes
	terminal  bool            // the spec asks for a terminal
	status    schema.AppStatus
	container *libcontainer.Container // nil after a refresh until needed (ctr)
	process   *libcontainer.Process   // nil after a refresh: the app is reaped by pid
	aio       *appIO
	pre       *prestarted    // created, its process not run yet (prestart)
	starting  startWatch     // bounds a container start in progress (create)
	stdin     io.WriteCloser // the app's stdin pipe (or pty master), when App.Stdin
	pty       *os.File       // pty master, when App.TTY
	log       *LogWriter
	stdout    *broadcaster
	stderr    *broadcaster
	exited    chan struct{} // closed once the exit is recorded
}

func (a *app) dir() schema.AppDir { return schema.PodDir(a.sv.podDir).App(a.name) }

func (a *app) logPath() string {
	p := a.manifest.LogPath
	if p == "" {
		return a.dir().DefaultLog()
	}
	if !filepath.IsAbs(p) {
		return filepath.Join(string(a.dir()), p)
	}
	return p
}

// tty reports whether the app runs on a terminal.
func (a *app) tty() bool {
	return a.manifest.TTY || a.terminal
}

// ctr returns the app's libcontainer container, loaded from its state
// after a refresh; a.mu must be held.
func (a *app) ctr() (*libcontainer.Container, error) {
	if a.container == nil {
		c, err := libcontainer.Load(a.sv.runcRoot(), a.name)
		if err != nil {
			return nil, fmt.Errorf("cannot load the container of app %q: %w", a.name, err)
		}
		a.container = c
	}
	return a.container, nil
}

// appSpec returns the app's adjusted spec, read again after a refresh;
// a.mu must be held.
func (a *app) appSpec() (*specs.Spec, error) {
	if a.spec != nil {
		return a.spec, nil
	}
	spec, err := loadAppSpec(a.sv.podDir, a.name)
	if err != nil {
		return nil, err
	}
	if err := adjustSpec(spec, a.sv.namespaces, a.sv.limits); err != nil {
		return nil, err
	}
	if a.resources != nil {
		var res specs.LinuxResources
		if err := json.Unmarshal(a.resources, &res); err != nil {
			return nil, fmt.Errorf("cannot decode the resources of app %q: %w", a.name, err)
		}
		spec.Linux.Resources = &res
	}
	a.spec = spec
	return spec, nil
}

// running reports whether the app's process runs; a.mu must be held.
func (a *app) running() bool { return a.status.State == schema.AppRunning }

// saveStatus writes the status file; a.mu must be held.
func (a *app) saveStatus() {
	st := a.status
	if err := control.WriteAppStatus(a.sv.podDir, &st); err != nil {
		slog.Warn("cannot save the app's status", "app", a.name, "error", err)
	}
}

// prestarted is an app's container whose init waits to run the app's
// process: libcontainer's Start is done, its Exec is not.
type prestarted struct {
	ctr *libcontainer.Container
	p   *libcontainer.Process
	aio *appIO
	lw  *LogWriter
}

// drop kills the waiting init and releases the container.
func (pre *prestarted) drop() {
	pre.ctr.Signal(sigKILL)
	pre.p.Wait()
	pre.aio.abort()
	pre.lw.Close()
	if err := pre.ctr.Destroy(); err != nil {
		slog.Debug("destroying a prestarted container", "error", err)
	}
}

// prestart creates the app's container up to its process (mounts,
// namespaces, cgroup), so that start only has to run it, and reports
// whether it did; a.mu must be held. A failure is only logged: start does
// it all again and reports the error. The supervisor must have entered
// (idle.go) for it: takePrestarted and dropPrestarted leave, so that it
// never goes lean with a container whose init waits on a Go process.
func (a *app) prestart() bool {
	t0 := time.Now()
	pre, err := a.create(t0.Add(prestartTimeout))
	if err != nil {
		slog.Debug("app prestart failed; start will retry", "app", a.name, "error", err)
		return false
	}
	a.pre = pre
	slog.Debug("app prestarted", "app", a.name, "after", time.Since(t0))
	return true
}

// takePrestarted returns the prestarted container (nil if none), now the
// caller's; a.mu must be held.
func (a *app) takePrestarted() *prestarted {
	pre := a.pre
	if pre != nil {
		a.pre = nil
		a.sv.leave()
	}
	return pre
}

// dropPrestarted releases a prestarted container; a.mu must be held.
func (a *app) dropPrestarted() {
	if pre := a.takePrestarted(); pre != nil {
		pre.drop()
	}
}

// prestartTimeout bounds a prestart, which no caller waits for: as long as
// the kubelet waits for a start.
const prestartTimeout = 2 * time.Minute

// lateStartGrace is how long a container's start may run past its
// deadline before its processes are killed: its init may be blocked in a
// mount (an unanswering FUSE or NFS server), holding its spawner thread.
const lateStartGrace = 5 * time.Second

// startWatch bounds an app's container start in progress (a childWatch on
// the spawner thread that runs it). A start request that waits for it (the
// app is held by its prestart) brings its own deadline in.
type startWatch struct {
	mu      sync.Mutex
	w       *childWatch
	waiting time.Time // the earliest deadline of a start waiting for the app
}

// arm watches the calling spawner thread's start until deadline, or the
// deadline of a start waiting for it if earlier.
func (s *startWatch) arm(deadline time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.waiting.IsZero() && (deadline.IsZero() || s.waiting.Before(deadline)) {
		deadline = s.waiting
	}
	s.w = watchChildren(deadline, lateStartGrace)
}

// disarm ends the watch and returns the PIDs it killed.
func (s *startWatch) disarm() []int {
	s.mu.Lock()
	w := s.w
	s.w = nil
	s.mu.Unlock()
	return w.stop()
}

// wait records the deadline of a start about to wait for the app and
// brings a watched start's deadline in to it.
func (s *startWatch) wait(deadline time.Time) {
	if deadline.IsZero() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting.IsZero() || deadline.Before(s.waiting) {
		s.waiting = deadline
	}
	s.w.tighten(deadline)
}

// waited forgets the waiting starts' deadline: the one holding the app
// bounds its own start.
func (s *startWatch) waited() {
	s.mu.Lock()
	s.waiting = time.Time{}
	s.mu.Unlock()
}

// create loads the app's spec and creates its container, whose init then
// waits (libcontainer's Start); its processes are killed if that runs
// lateStartGrace past deadline (zero: unbounded).
func (a *app) create(deadline time.Time) (*prestarted, error) {
	return a.newContainer(func(ctr *libcontainer.Container, p *libcontainer.Process) error {
		var killed []int
		err := a.sv.spawner.do(func() error {
			a.starting.arm(deadline)
			err := ctr.Start(p)
			killed = a.starting.disarm()
			return err
		})
		if len(killed) > 0 {
			slog.Warn("killed a container start running past its deadline", "app", a.name, "pids", killed, "grace", lateStartGrace)
			return fmt.Errorf("cannot start app %q: its container's processes (pid %v) were killed %v past the deadline (%w)",
				a.name, killed, lateStartGrace, context.DeadlineExceeded)
		}
		if err != nil {
			return fmt.Errorf("cannot start app %q: %w", a.name, err)
		}
		return nil
	})
}

// newContainer loads the app's spec, creates its container and has run
// start its first process (a started init, or a restored one).
func (a *app) newContainer(run func(*libcontainer.Container, *libcontainer.Process) error) (_ *prestarted, retErr error) {
	spec, err := loadAppSpec(a.sv.podDir, a.name)
	if err != nil {
		return nil, err
	}
	if err := adjustSpec(spec, a.sv.namespaces, a.sv.limits); err != nil {
		return nil, err
	}
	cfg, err := libcontainerConfig(a.name, spec, a.sv.systemd)
	if err != nil {
		return nil, &codedError{control.CodeInvalid, err}
	}
	if err := validate.Validate(cfg); err != nil { // the request's fault, unlike Create's other errors
		return nil, &codedError{control.CodeInvalid, fmt.Errorf("app %q: libcontainer refuses its config: %w", a.name, err)}
	}
	a.spec, a.terminal, a.resources = spec, spec.Process.Terminal, nil // setupIO asks for a terminal
	a.destroyStale()
	ctr, err := libcontainer.Create(a.sv.runcRoot(), a.name, cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot create container of app %q: %w", a.name, err)
	}
	defer func() {
		if retErr != nil {
			ctr.Destroy()
		}
	}()
	lw, err := OpenLog(a.logPath())
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			lw.Close()
		}
	}()
	p := newProcess(spec.Process, true)
	aio, err := a.setupIO(p, lw)
	if err != nil {
		return nil, err
	}
	if err := run(ctr, p); err != nil {
		aio.abort()
		return nil, err
	}
	return &prestarted{ctr: ctr, p: p, aio: aio, lw: lw}, nil
}

// start runs the app's process in its container, prestarted or created
// now. a.mu must be held.
func (a *app) start(deadline time.Time) (retErr error) {
	t0 := time.Now()
	a.status = schema.AppStatus{Name: a.name, State: schema.AppCreated, CreatedAt: a.manifest.CreatedAt}
	if a.status.CreatedAt.IsZero() {
		a.status.CreatedAt = t0
	}
	defer func() {
		if retErr != nil {
			now := time.Now()
			a.status.State = schema.AppExited
			a.status.ExitCode = 128
			a.status.Reason = "StartError"
			a.status.Message = retErr.Error()
			a.status.StartedAt = now
			a.status.FinishedAt = now
			a.saveStatus()
		}
	}()
	pre := a.takePrestarted()
	wasPrestarted := pre != nil
	if images := a.dir().Restore(); exists(images) {
		if pre != nil {
			pre.drop()
		}
		var err error
		if pre, err = a.restore(images, deadline); err != nil {
			return err
		}
	} else if pre != nil {
		if err := pre.ctr.Exec(); err != nil {
			slog.Debug("prestarted app cannot run; starting it anew", "app", a.name, "error", err)
			pre.drop()
			pre = nil
		}
	}
	if pre == nil {
		var err error
		if pre, err = a.create(deadline); err != nil {
			return err
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			pre.drop()
			return fmt.Errorf("cannot start app %q: its container was created after the request's deadline (%w)", a.name, context.DeadlineExceeded)
		}
		if err := pre.ctr.Exec(); err != nil {
			pre.drop()
			return fmt.Errorf("cannot start app %q: %w", a.name, err)
		}
	}
	if err := pre.aio.started(); err != nil {
		pre.ctr.Signal(sigKILL)
		pre.p.Wait()
		pre.ctr.Destroy()
		pre.lw.Close()
		return fmt.Errorf("cannot set up stdio of app %q: %w", a.name, err)
	}
	slog.Debug("app run", "app", a.name, "prestarted", wasPrestarted, "after", time.Since(t0))
	pid, _ := pre.p.Pid()
	a.container, a.process, a.log, a.aio = pre.ctr, pre.p, pre.lw, pre.aio
	a.status.State = schema.AppRunning
	a.status.Pid = pid
	a.status.StartedAt = time.Now()
	a.exited = make(chan struct{})
	a.saveStatus()
	go a.wait()
	return nil
}

// destroyStale removes a container left by an earlier run of this app.
func (a *app) destroyStale() {
	if old, err := libcontainer.Load(a.sv.runcRoot(), a.name); err == nil {
		old.Signal(sigKILL)
		waitStopped(old, 5*time.Second)
		if err := old.Destroy(); err != nil {
			slog.Debug("destroying a stale container", "app", a.name, "error", err)
		}
	}
	os.RemoveAll(filepath.Join(a.sv.runcRoot(), a.name))
}

// newProcess builds a libcontainer process from the spec's process; the
// container config carries capabilities, rlimits, no_new_privs, etc.
func newProcess(sp *specs.Process, init bool) *libcontainer.Process {
	p := &libcontainer.Process{
		Args: sp.Args,
		Env:  sp.Env,
		Cwd:  sp.Cwd,
		UID:  int(sp.User.UID),
		GID:  int(sp.User.GID),
		Init: init,
	}
	for _, g := range sp.User.AdditionalGids {
		p.AdditionalGroups = append(p.AdditionalGroups, int(g))
	}
	if sp.ConsoleSize != nil {
		p.ConsoleWidth, p.ConsoleHeight = uint16(sp.ConsoleSize.Width), uint16(sp.ConsoleSize.Height)
	}
	return p
}

// wait reaps the app, records its exit and destroys its container.
func (a *app) wait() {
	a.mu.Lock()
	pid, p := a.status.Pid, a.process
	a.mu.Unlock()
	// Wait for the exit without reaping: a refresh may not lose it.
	var si unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &si, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	a.sv.enterOrWait()
	defer a.sv.leave()
	code, sig := 255, ""
	if p != nil {
		ps, werr := p.Wait()
		code, sig = exitStatus(ps, werr)
	} else {
		var ws unix.WaitStatus
		for {
			_, err := unix.Wait4(pid, &ws, 0, nil)
			if err != unix.EINTR {
				if err == nil {
					code, sig = waitStatusCode(syscall.WaitStatus(ws))
				}
				break
			}
		}
	}
	a.mu.Lock()
	ctr, cerr := a.ctr()
	aio := a.aio
	a.mu.Unlock()
	oom := false
	if cerr != nil {
		slog.Warn("cannot clean up after the app", "app", a.name, "error", cerr)
	} else {
		oom = oomKilled(ctr)
		// Kill what may be left (a shared PID namespace keeps orphans alive) and
		// free the cgroup; only then can the output pipes reach EOF.
		ctr.Signal(sigKILL)
		if err := ctr.Destroy(); err != nil {
			slog.Warn("cannot destroy the app's container", "app", a.name, "error", err)
		}
	}
	aio.wait(2 * time.Second)
	a.mu.Lock()
	a.status.State = schema.AppExited
	a.status.FinishedAt = time.Now()
	a.status.ExitCode, a.status.Signal = code, sig
	a.status.OOMKilled = oom
	switch {
	case oom:
		a.status.Reason = "OOMKilled"
	case a.status.ExitCode == 0:
		a.status.Reason = "Completed"
	default:
		a.status.Reason = "Error"
	}
	a.saveStatus()
	a.log.Close()
	a.stdin, a.pty, a.aio, a.process = nil, nil, nil, nil
	close(a.exited)
	slog.Debug("app exited", "app", a.name, "code", a.status.ExitCode, "signal", a.status.Signal, "reason", a.status.Reason)
	a.mu.Unlock()
	a.sv.appExited()
}

// stop sends the app's stop signal (SIGTERM by default), then SIGKILL after
// timeout, and waits for the exit.
func (a *app) stop(timeout time.Duration) {
	a.mu.Lock()
	if !a.running() {
		a.mu.Unlock()
		return
	}
	ctr, cerr := a.ctr()
	exited := a.exited
	sig, err := parseSignal(a.manifest.StopSignal)
	a.mu.Unlock()
	if cerr != nil {
		slog.Warn("cannot stop the app", "app", a.name, "error", cerr)
		return
	}
	if err != nil {
		slog.Warn("bad stop signal; using SIGTERM", "app", a.name, "error", err)
		sig = sigTERM
	}
	if timeout > 0 {
		if err := ctr.Signal(sig); err != nil && !errors.Is(err, libcontainer.ErrNotRunning) {
			slog.Debug("cannot signal the app", "app", a.name, "signal", sig, "error", err)
		}
		select {
		case <-exited:
			return
		case <-time.After(timeout):
		}
	}
	if err := ctr.Signal(sigKILL); err != nil && !errors.Is(err, libcontainer.ErrNotRunning) {
		slog.Debug("cannot signal the app", "app", a.name, "signal", sigKILL, "error", err)
	}
	<-exited
}

// updateResources applies new cgroup limits to the running app.
func (a *app) updateResources(res *specs.LinuxResources) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.running() {
		return errNotRunning(a.name)
	}
	ctr, err := a.ctr()
	if err != nil {
		return err
	}
	aspec, err := a.appSpec()
	if err != nil {
		return err
	}
	cfg := ctr.Config()
	spec := *aspec
	linux := *spec.Linux
	linux.Resources = res
	spec.Linux = &linux
	nc, err := libcontainerConfig(a.name, &spec, a.sv.systemd)
	if err != nil {
		return err
	}
	prev := cfg.Cgroups.Resources
	merged := *prev
	mergeResources(&merged, nc.Cgroups.Resources)
	cg := *cfg.Cgroups
	cg.Resources = &merged
	cfg.Cgroups = &cg
	if err := ctr.Set(cfg); err != nil {
		// libcontainer has set the previous limits back, but only those
		// it had a value for: lift those the refused update added
		if back, ok := liftAdded(prev, &merged); ok {
			bcfg := ctr.Config()
			bcg := *bcfg.Cgroups
			bcg.Resources = back
			bcfg.Cgroups = &bcg
			if err2 := ctr.Set(bcfg); err2 != nil {
				slog.Warn("cannot lift the limits of a refused update", "app", a.name, "error", err2)
			}
		}
		return fmt.Errorf("cannot update resources of app %q: %w", a.name, err)
	}
	a.spec.Linux.Resources = res
	if b, err := json.Marshal(res); err == nil {
		a.resources = b
	}
	return nil
}

// liftAdded returns prev with "no limit" (-1) for the memory, swap and CPU
// quota limits that next sets and prev has none of (0: libcontainer writes
// nothing for them), and whether there is any.
func liftAdded(prev, next *cgroups.Resources) (*cgroups.Resources, bool) {
	back, lift := *prev, false
	for _, l := range []struct{ prev, next, back *int64 }{
		{&prev.Memory, &next.Memory, &back.Memory},
		{&prev.MemorySwap, &next.MemorySwap, &back.MemorySwap},
		{&prev.CpuQuota, &next.CpuQuota, &back.CpuQuota},
	} {
		if *l.prev == 0 && *l.next != 0 {
			*l.back, lift = -1, true
		}
	}
	return &back, lift
}

// mergeResources copies the limits CRI may update (CPU, memory, pids,
// hugepages, unified) from n to r, keeping the device rules of r.
func mergeResources(r, n *cgroups.Resources) {
	r.CpuShares, r.CpuQuota, r.CpuPeriod = n.CpuShares, n.CpuQuota, n.CpuPeriod
	r.CpuWeight = n.CpuWeight // the shares for cgroup v2, which writes only this
	r.CpusetCpus, r.CpusetMems = n.CpusetCpus, n.CpusetMems
	r.Memory, r.MemoryReservation, r.MemorySwap = n.Memory, n.MemoryReservation, n.MemorySwap
	r.PidsLimit = n.PidsLimit
	r.HugetlbLimit = n.HugetlbLimit
	r.Unified = n.Unified
}
