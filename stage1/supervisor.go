package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/stopsig"
)

const (
	modeRun     = "run"
	modeSandbox = "sandbox"

	lockFd  = 3 // the flock'ed pod directory, inherited from stage0
	readyFd = 4 // the readiness pipe

	sigtermGrace = 10 * time.Second
)

// supervisor is the state of one pod's stage1 process.
type supervisor struct {
	podDir     string
	mode       string
	manifest   *schema.PodManifest
	namespaces podNamespaces
	limits     limits
	systemd    bool
	pidns      *pidnsHolder
	spawner    *spawner
	listener   *net.UnixListener
	serveDone  chan struct{} // closed when serve returns; nil before serving (mu)

	// refresh (refresh.go)
	refreshDelay time.Duration
	stopR        *os.File // the stop signals (package stopsig)

	mu        sync.Mutex
	apps      map[string]*app
	stopping  bool
	allUp     bool          // mode run: every app of the manifest was started
	done      chan struct{} // closed when the supervisor must exit
	doneOnce  sync.Once
	busy      int           // connections, app exits and prestarted containers being handled
	dirty     bool          // work was done since the last refresh
	execing   bool          // a refresh is under way
	attempt   chan struct{} // closed when that refresh gives up
	sigPaused chan struct{} // closed when handleSignals pauses for a refresh
	idle      *time.Timer   // starts a refresh

	cleanupOnce sync.Once
}

func (sv *supervisor) runcRoot() string { return filepath.Join(sv.podDir, "runc") }

// readManifest reads the pod manifest (stage0 rewrites it when apps change),
// without the apps it lists after their removal.
func readManifest(podDir string) (*schema.PodManifest, error) {
	p := schema.PodDir(podDir).Manifest()
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("cannot read pod manifest: %w", err)
	}
	var m schema.PodManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("cannot parse pod manifest %q: %w", p, err)
	}
	if m.UUID == "" {
		return nil, fmt.Errorf("pod manifest %q has no uuid", p)
	}
	schema.PodDir(podDir).DropRemovedApps(&m)
	return &m, nil
}

// runSupervisor is `stage1 run`. The main goroutine runs the spawner.
func runSupervisor(podDir, mode string, refreshDelay time.Duration) error {
	s := newSpawner()
	errc := make(chan error, 1)
	go func() {
		errc <- startSupervisor(s, podDir, mode, refreshDelay)
		s.stop()
	}()
	s.loop()
	return <-errc
}

func newSupervisor(s *spawner, podDir, mode string, refreshDelay time.Duration, stopR *os.File) *supervisor {
	return &supervisor{podDir: podDir, mode: mode, apps: map[string]*app{}, done: make(chan struct{}), spawner: s,
		refreshDelay: refreshDelay, stopR: stopR}
}

func startSupervisor(s *spawner, podDir, mode string, refreshDelay time.Duration) error {
	// Neither the pod lock nor the readiness pipe may leak into apps.
	unix.CloseOnExec(lockFd)
	unix.CloseOnExec(readyFd)
	nsRefPid = os.Getppid() // stage0, which is waiting for us
	ready := os.NewFile(readyFd, "ready")
	if !filepath.IsAbs(podDir) {
		return reportReady(ready, fmt.Errorf("--pod-dir %q is not absolute", podDir))
	}
	stopR, err := stopsig.Catch()
	if err != nil {
		return reportReady(ready, err)
	}
	sv := newSupervisor(s, podDir, mode, refreshDelay, stopR)
	sv.handleSignals()
	if err := sv.setup(); err != nil {
		sv.cleanup()
		return reportReady(ready, err)
	}
	if mode == modeRun {
		if err := sv.startAll(); err != nil {
			sv.shutdown(0)
			sv.cleanup()
			return reportReady(ready, err)
		}
		// Apps that exited while later ones were starting did not end
		// the pod; check now.
		sv.mu.Lock()
		sv.allUp = true
		sv.mu.Unlock()
		sv.appExited()
	}
	reportReady(ready, nil)
	return sv.serveUntilDone()
}

// serveUntilDone answers on the socket until the supervisor must exit.
func (sv *supervisor) serveUntilDone() error {
	sv.startServing()
	sv.enter() // what was done before serving: refresh after it
	sv.leave()
	<-sv.done
	sv.cleanup()
	return nil
}

// reportReady writes "ok" or the error on the readiness pipe and closes it.
func reportReady(ready *os.File, err error) error {
	msg := "ok\n"
	if err != nil {
		msg = err.Error() + "\n"
	}
	if ready != nil {
		ready.WriteString(msg)
		ready.Close()
	}
	return err
}

// setup prepares everything the apps need, then listens on the socket.
func (sv *supervisor) setup() error {
	m, err := readManifest(sv.podDir)
	if err != nil {
		return err
	}
	sv.manifest = m
	sv.limits = currentLimits()
	sv.systemd = systemdRunning()
	slog.Debug("supervising", "pod", m.UUID, "limits", sv.limits, "systemd", sv.systemd)
	if sv.systemd {
		if err := joinSystemdScope(m.UUID, m.CgroupParent, sv.podDir); err != nil {
			slog.Warn("staying in the caller's cgroup", "error", err)
		}
	}
	self := strconv.Itoa(os.Getpid())
	sv.namespaces.ipc = "/proc/" + self + "/ns/ipc"
	sv.namespaces.uts = "/proc/" + self + "/ns/uts"
	netns := schema.PodDir(sv.podDir).NetNS()
	if _, err := os.Stat(netns); err == nil {
		sv.namespaces.net = netns
	} else if m.Net != "host" && m.Net != "" {
		return fmt.Errorf("pod network %q needs %s: %w", m.Net, netns, err)
	}
	if sv.namespaces.user, err = userNSPath(sv.podDir, m); err != nil {
		return err
	}
	if sv.namespaces.user != "" {
		if err := sv.userNSPodNamespaces(m); err != nil {
			return err
		}
	} else {
		if err := setHostname(m.Hostname); err != nil {
			return err
		}
		if err := applySysctls(m.Sysctls, sv.namespaces.net); err != nil {
			return err
		}
	}
	if m.SharedPID {
		if err := os.MkdirAll(sv.runcRoot(), 0o700); err != nil {
			return fmt.Errorf("cannot create %q: %w", sv.runcRoot(), err)
		}
		h, err := startPIDNSHolder(sv.spawner, sv.namespaces.user, sv.namespaces.net, filepath.Join(sv.runcRoot(), "pidns-root"))
		if err != nil {
			return err
		}
		sv.pidns = h
		sv.namespaces.pid = h.nsPath()
	}
	if err := os.MkdirAll(sv.runcRoot(), 0o700); err != nil {
		return fmt.Errorf("cannot create %q: %w", sv.runcRoot(), err)
	}
	if err := sv.listen(); err != nil {
		return err
	}
	pidFile := schema.PodDir(sv.podDir).Stage1PID()
	if err := fileperm.WriteFileVolatile(pidFile, []byte(self+"\n"), fileperm.Shared); err != nil {
		return fmt.Errorf("cannot write %q: %w", pidFile, err)
	}
	return nil
}

// startAll starts every app of the manifest (mode run).
func (sv *supervisor) startAll() error {
	if len(sv.manifest.Apps) == 0 {
		return fmt.Errorf("pod %s has no apps to run", sv.manifest.UUID)
	}
	for _, am := range sv.manifest.Apps {
		if err := sv.startApp(am.Name, time.Time{}); err != nil {
			return err
		}
	}
	return nil
}

// appExited is called by every app after its exit was recorded; in mode run
// the supervisor ends when no app runs any more.
func (sv *supervisor) appExited() {
	if sv.mode != modeRun {
		return
	}
	sv.mu.Lock()
	wait := sv.stopping || !sv.allUp
	sv.mu.Unlock()
	if wait {
		return
	}
	for _, a := range sv.snapshot() {
		a.mu.Lock()
		r := a.running()
		a.mu.Unlock()
		if r {
			return
		}
	}
	sv.finish()
}

// finish makes runSupervisor return; sv.mu must be held or irrelevant.
func (sv *supervisor) finish() { sv.doneOnce.Do(func() { close(sv.done) }) }

// shutdown stops every app with the grace period and ends the supervisor.
func (sv *supervisor) shutdown(grace time.Duration) {
	sv.stopAll(grace)
	sv.finish()
}

// stopAll stops every app in parallel with the grace period; no app may
// start afterwards.
func (sv *supervisor) stopAll(grace time.Duration) {
	sv.mu.Lock()
	sv.stopping = true
	sv.mu.Unlock()
	apps := sv.snapshot()
	var wg sync.WaitGroup
	for _, a := range apps {
		wg.Add(1)
		go func() { defer wg.Done(); a.stop(grace) }()
	}
	wg.Wait()
}

// cleanup releases what the pod holds: listener, pidns holder, containers,
// cgroups and runc state.
func (sv *supervisor) cleanup() { sv.cleanupOnce.Do(sv.doCleanup) }

func (sv *supervisor) doCleanup() {
	if sv.listener != nil {
		sv.listener.Close()
	}
	os.Remove(schema.PodDir(sv.podDir).Stage1Socket())
	sv.mu.Lock()
	sv.stopping = true
	sv.mu.Unlock()
	for _, a := range sv.snapshot() {
		a.stop(0)
		a.mu.Lock()
		a.dropPrestarted()
		a.mu.Unlock()
	}
	if sv.pidns != nil {
		sv.pidns.stop()
	}
	if sv.manifest != nil {
		if err := cleanupPod(sv.podDir, sv.manifest); err != nil {
			slog.Warn("cannot clean up the pod", "error", err)
			return
		}
		// stage0 need not run `stage1 gc` nor look for orphans
		if err := fileperm.WriteFile(schema.PodDir(sv.podDir).Stage1Clean(), nil, fileperm.Shared); err != nil {
			slog.Warn("cannot mark the pod clean", "error", err)
		}
	}
}
