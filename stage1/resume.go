package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/stage1/stopsig"
)

// resumeSupervisor is `stage1 resume`: the Go supervisor again, after
// `stage1 lean`; stop is the signal that woke it to stop the pod, if any.
func resumeSupervisor(stateFd int, stop syscall.Signal) error {
	s := newSpawner()
	errc := make(chan error, 1)
	go func() {
		errc <- resume(s, stateFd, stop)
		s.stop()
	}()
	s.loop()
	return <-errc
}

func resume(s *spawner, stateFd int, stop syscall.Signal) error {
	// The stop signals taken since the lean image's last read of its
	// signalfd are in stopR (package stopsig, but for its short window).
	stopR, err := stopsig.Catch()
	if err != nil {
		return err
	}
	unix.CloseOnExec(lockFd)
	f := os.NewFile(uintptr(stateFd), "stage1-state")
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("cannot read the supervisor's state: %w", err)
	}
	var st resumeState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("cannot decode the supervisor's state: %w", err)
	}
	if st.Debug {
		logLevel.Set(slog.LevelDebug)
	}
	sv := newSupervisor(s, st.PodDir, st.Mode, st.RefreshDelay, stopR)
	sv.allUp = st.AllUp
	sv.namespaces = podNamespaces{net: st.Namespaces.Net, ipc: st.Namespaces.IPC, uts: st.Namespaces.UTS,
		pid: st.Namespaces.PID, user: st.Namespaces.User}
	sv.limits = currentLimits()
	sv.systemd = systemdRunning()
	if st.PIDNS != nil {
		sv.pidns = &pidnsHolder{pid: st.PIDNS.Pid, inUserNS: st.PIDNS.InUserNS}
	}
	var running []*app
	for i := range st.Apps {
		if a := sv.adopt(&st.Apps[i]); a.running() {
			running = append(running, a)
		}
	}
	if sv.manifest, err = readManifest(st.PodDir); err != nil {
		slog.Warn("resuming without the pod manifest", "error", err)
	}
	// Reaped from now on: a shutdown waits for the apps' exits.
	for _, a := range running {
		a.aio.startPumps()
		go a.wait()
	}
	lf := adoptFile(st.Listener, "stage1.sock")
	l, err := net.FileListener(lf)
	lf.Close()
	if err != nil {
		sv.shutdown(0)
		sv.cleanup()
		return fmt.Errorf("cannot take over the control socket: %w", err)
	}
	sv.listener = l.(*net.UnixListener)
	sv.handleSignals()
	if stop != 0 {
		sv.stopOnSignal(stop)
	}
	slog.Debug("supervisor refreshed", "apps", len(st.Apps), "running", len(running))

	return sv.serveUntilDone()
}

// adopt rebuilds an app of the state.
func (sv *supervisor) adopt(as *appState) *app {
	a := &app{sv: sv, name: as.Name, manifest: as.Manifest, status: as.Status, terminal: as.Terminal,
		resources: as.Resources}
	sv.apps[a.name] = a
	if as.Out < 0 && as.Pty < 0 {
		return a
	}
	a.log = &LogWriter{path: a.logPath(), f: adoptFile(as.Log, a.logPath()), now: time.Now}
	aio := &appIO{a: a, lw: a.log, outR: adoptFile(as.Out, "stdout"), errR: adoptFile(as.Err, "stderr"),
		pty: adoptFile(as.Pty, "pty"), stdinW: adoptFile(as.Stdin, "stdin")}
	aio.outLS, aio.errLS = newLineSplitter(a.log, "stdout"), newLineSplitter(a.log, "stderr")
	a.stdout, a.stderr = newBroadcaster(), newBroadcaster()
	a.pty = aio.pty
	switch {
	case aio.stdinW != nil:
		a.stdin = aio.stdinW
	case aio.pty != nil && a.manifest.Stdin:
		a.stdin = aio.pty
	}
	a.aio = aio
	a.exited = make(chan struct{})
	return a
}

// adoptFile takes an inherited descriptor (nil for -1) and marks it
// close-on-exec again.
func adoptFile(fd int, name string) *os.File {
	if fd < 0 {
		return nil
	}
	unix.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), name)
}
