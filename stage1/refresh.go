package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/stopsig"
)

// An idle supervisor need not be a Go process. What a start, an exec or an
// app's exit leaves in a Go heap (libcontainer's configs, JSON type caches,
// grown stacks, spans half used) stays resident, and even a fresh Go image
// of this binary holds ~1.2 MiB of its own and maps most of the binary's
// pages. After refreshDelay with nothing in flight, the supervisor
// re-executes its own binary from the main thread as `stage1 lean`
// (lean.go: C, ~0.1 MiB): the same process, pid, children and descriptors.
// It logs the apps' output and, on anything else, execs `stage1 resume`,
// the Go supervisor, which reads back what it must know (resumeState) from
// a memfd that the lean image passes on untouched.

// defaultRefreshDelay is longer than the kubelet's default probe period
// (10 s): a pod with exec probes keeps its Go supervisor instead of paying
// the exec of the Go image (~20 ms) on every probe.
const defaultRefreshDelay = 15 * time.Second

// errRefreshBusy: something came in while the refresh was being prepared.
var errRefreshBusy = errors.New("busy")

// resumeState is what `stage1 resume` reads from its state descriptor.
type resumeState struct {
	PodDir       string        `json:"podDir"`
	Mode         string        `json:"mode"`
	Debug        bool          `json:"debug,omitempty"`
	RefreshDelay time.Duration `json:"refreshDelay"`
	Namespaces   nsState       `json:"namespaces"`
	AllUp        bool          `json:"allUp,omitempty"`
	Listener     int           `json:"listener"`
	PIDNS        *holderState  `json:"pidns,omitempty"`
	Apps         []appState    `json:"apps,omitempty"`
}

type nsState struct {
	Net, IPC, UTS, PID, User string
}

type holderState struct {
	Pid      int  `json:"pid"`
	InUserNS bool `json:"inUserNS,omitempty"`
}

// appState is an app the supervisor knows; a running one also has its
// descriptors (-1: none).
type appState struct {
	Name      string           `json:"name"`
	Manifest  schema.App       `json:"manifest"`
	Status    schema.AppStatus `json:"status"`
	Terminal  bool             `json:"terminal,omitempty"`
	Resources json.RawMessage  `json:"resources,omitempty"`
	Log       int              `json:"log"`
	Out       int              `json:"out"`
	Err       int              `json:"err"`
	Stdin     int              `json:"stdin"`
	Pty       int              `json:"pty"`
}

// refresh is the idle timer's: it re-executes the supervisor as `stage1
// lean` unless something is in flight.
func (sv *supervisor) refresh() {
	sv.mu.Lock()
	// the exec would end the spare threads and kill what they started
	if sv.busy > 0 || sv.stopping || sv.execing || !sv.dirty || sv.spawner.spareChildren() {
		sv.mu.Unlock()
		return
	}
	sv.execing = true
	sv.attempt = make(chan struct{})
	sv.mu.Unlock()
	err := sv.reexec() // returns only if the supervisor was not replaced
	sv.stopR.SetReadDeadline(time.Time{})
	sv.mu.Lock()
	sv.execing = false
	close(sv.attempt)
	if err != nil && !errors.Is(err, errRefreshBusy) {
		slog.Warn("cannot refresh the supervisor; no more refreshes", "error", err)
		sv.refreshDelay = 0
	}
	sv.mu.Unlock()
}

// reexec stops the signal handler, the listener and the output pumps,
// logs the partial lines (P entries), then execs `stage1 lean` on the main
// thread; on failure it restarts what it stopped.
func (sv *supervisor) reexec() error {
	if !sv.pauseSignals() {
		return errRefreshBusy
	}
	sv.mu.Lock()
	serveDone := sv.serveDone
	sv.mu.Unlock()
	sv.listener.SetDeadline(time.Unix(1, 0))
	<-serveDone
	sv.listener.SetDeadline(time.Time{})
	defer sv.startServing() // reached only if the exec did not happen
	sv.mu.Lock()
	busy := sv.busy > 0 || sv.stopping || sv.spawner.spareChildren()
	sv.mu.Unlock()
	if busy {
		return errRefreshBusy
	}
	var paused []*app
	defer func() {
		for _, a := range paused {
			a.mu.Lock()
			a.aio.startPumps()
			a.mu.Unlock()
		}
	}()
	apps := sv.snapshot()
	for _, a := range apps {
		a.mu.Lock()
		var err error
		if a.aio != nil {
			if err = a.aio.pausePumps(); err == nil {
				paused = append(paused, a)
				a.aio.outLS.Flush()
				a.aio.errLS.Flush()
			}
		}
		a.mu.Unlock()
		if err != nil {
			return err
		}
	}
	st, fds, closers, err := sv.state(apps)
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	if err != nil {
		return err
	}
	stopFd := fileFd(sv.stopR)
	fds = append(fds, stopFd)
	return sv.spawner.doMain(func() error { return execLean(st, fds, stopFd) })
}

// state describes the supervisor for `stage1 resume`: the state and the
// descriptors it names; closers are the duplicates made for it.
func (sv *supervisor) state(apps []*app) (*resumeState, []int, []io.Closer, error) {
	st := &resumeState{PodDir: sv.podDir, Mode: sv.mode, Debug: logLevel.Level() <= slog.LevelDebug,
		RefreshDelay: sv.refreshDelay, Listener: -1,
		Namespaces: nsState{Net: sv.namespaces.net, IPC: sv.namespaces.ipc, UTS: sv.namespaces.uts,
			PID: sv.namespaces.pid, User: sv.namespaces.user}}
	sv.mu.Lock()
	st.AllUp = sv.allUp
	sv.mu.Unlock()
	if sv.pidns != nil {
		st.PIDNS = &holderState{Pid: sv.pidns.pid, InUserNS: sv.pidns.inUserNS}
	}
	lf, err := sv.listener.File()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cannot duplicate the control socket: %w", err)
	}
	closers := []io.Closer{lf}
	st.Listener = fileFd(lf)
	fds := []int{lockFd, st.Listener}
	for _, a := range apps {
		a.mu.Lock()
		as := appState{Name: a.name, Manifest: a.manifest, Status: a.status, Terminal: a.terminal,
			Resources: a.resources, Log: -1, Out: -1, Err: -1, Stdin: -1, Pty: -1}
		if a.aio != nil {
			aio := a.aio
			as.Log = fileFd(a.log.file())
			as.Out, as.Err, as.Pty = fileFd(aio.outR), fileFd(aio.errR), fileFd(aio.pty)
			if aio.stdinW != nil && a.stdin != nil {
				as.Stdin = fileFd(aio.stdinW)
			}
			for _, fd := range []int{as.Log, as.Out, as.Err, as.Stdin, as.Pty} {
				if fd >= 0 {
					fds = append(fds, fd)
				}
			}
		}
		a.mu.Unlock()
		st.Apps = append(st.Apps, as)
	}
	return st, fds, closers, nil
}

// fileFd is f's descriptor (-1 for nil), without making it blocking as
// Fd would.
func fileFd(f *os.File) int {
	if f == nil {
		return -1
	}
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(u uintptr) { fd = int(u) })
	}
	return fd
}

// execLean writes the state to a memfd and execs `stage1 lean` with it and
// fds inherited (stopFd: the stop signals' pipe). It runs on the main
// thread, the parent of the pod's processes, and returns only on failure.
func execLean(st *resumeState, fds []int, stopFd int) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("cannot encode the supervisor's state: %w", err)
	}
	// close-on-exec until the fork lock is held: a child another thread
	// forks meanwhile must not get the state (the apps' environment)
	mfd, err := unix.MemfdCreate("stage1-state", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("cannot create the state file: %w", err)
	}
	// mf owns mfd: closing it also by number would close it twice (mf's
	// finalizer), the second time whatever took the number meanwhile
	mf := os.NewFile(uintptr(mfd), "stage1-state")
	defer mf.Close()
	if _, err := mf.Write(b); err != nil {
		return fmt.Errorf("cannot write the state file: %w", err)
	}
	if _, err := unix.Seek(mfd, 0, io.SeekStart); err != nil {
		return fmt.Errorf("cannot rewind the state file: %w", err)
	}
	args := []string{os.Args[0], "lean", "--pod-dir=" + st.PodDir, "--state-fd=" + strconv.Itoa(mfd),
		"--listener=" + strconv.Itoa(st.Listener), "--stop-fd=" + strconv.Itoa(stopFd)}
	for _, as := range st.Apps {
		if as.Status.State != schema.AppRunning || (as.Out < 0 && as.Pty < 0) {
			continue
		}
		out, errFd := as.Out, as.Err
		if as.Pty >= 0 {
			out, errFd = as.Pty, -1
		}
		args = append(args, fmt.Sprintf("--app=%d,%d,%d,%d", as.Status.Pid, as.Log, out, errFd))
	}
	// No fork may inherit the descriptors while they lack close-on-exec.
	syscall.ForkLock.Lock()
	defer syscall.ForkLock.Unlock()
	fds = append(slices.Clip(fds), mfd)
	defer func() { // reached only if the exec did not happen
		for _, fd := range fds {
			unix.CloseOnExec(fd)
		}
	}()
	for _, fd := range fds {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
			return fmt.Errorf("cannot pass descriptor %d on: %w", fd, err)
		}
	}
	slog.Debug("refreshing the supervisor", "apps", len(st.Apps))
	env := os.Environ()
	// Blocked on this thread, a stop signal goes to another one, which the
	// exec may end between taking it and writing it to the pipe: block
	// them as late as possible.
	restore, quiet, err := stopsig.Block()
	if err != nil {
		return err
	}
	if quiet > 0 {
		slog.Debug("threads did not block the stop signals (ended?)", "threads", quiet)
	}
	defer restore()
	err = unix.Exec("/proc/self/exe", args, env)
	return fmt.Errorf("cannot re-execute the supervisor: %w", err)
}
