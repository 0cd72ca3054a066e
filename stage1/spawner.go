package main

import (
	"errors"
	"log/slog"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// spawner runs every process start on a thread that lives as long as the
// supervisor. The kernel sends a child its parent-death signal when the
// *thread* that forked it ends, and Go ends threads (a locked goroutine
// that returns), but never the main thread. Apps (and exec'd processes)
// get SIGKILL as parent-death signal in `stage1 init`, and their parent is
// the spawning thread (nsexec clones them with CLONE_PARENT), so they die
// with the supervisor and only then.
//
// Starts run on the main thread, which also re-executes the supervisor
// (refresh.go): execve keeps the children of the thread that calls it and
// ends the others. A start can hang there (a container's init blocked in a
// mount of an unanswering FUSE or NFS server), and every start and exec of
// the pod would wait behind it, its probes failing: a start that has
// waited spawnerPatience for the main thread runs on a spare thread
// instead, a goroutine locked to its thread for good. Its children would
// die with that thread at an execve, so the supervisor does not
// re-execute itself while a spare thread has any (spareChildren).
type spawner struct {
	reqs  chan func()
	spare chan func()
	quit  chan struct{}

	patience time.Duration // spawnerPatience but in tests

	mu   sync.Mutex
	tids []int // of the spare threads, at most maxSpareThreads
}

const (
	// spawnerPatience is how long a start waits for a busy main thread: a
	// start takes 10-100 ms there, and an exec probe has 1 s by default.
	spawnerPatience = 500 * time.Millisecond
	// maxSpareThreads bounds the threads that hung starts can hold.
	maxSpareThreads = 8
)

var errSpawnerStopped = errors.New("the supervisor is exiting")

func newSpawner() *spawner {
	return &spawner{reqs: make(chan func()), spare: make(chan func()), quit: make(chan struct{}),
		patience: spawnerPatience}
}

// loop runs the requests until stop; the caller is the main goroutine,
// locked to the main thread by main.go's init.
func (s *spawner) loop() {
	for {
		select {
		case f := <-s.reqs:
			f()
		case <-s.quit:
			return
		}
	}
}

// stop ends loop.
func (s *spawner) stop() { close(s.quit) }

// do runs f on the main thread, or on a spare thread if the main thread
// stays busy for spawnerPatience, and returns its error.
func (s *spawner) do(f func() error) error { return s.run(f, s.patience) }

// doMain runs f on the main thread, however long it waits for it.
func (s *spawner) doMain(f func() error) error { return s.run(f, 0) }

func (s *spawner) run(f func() error, patience time.Duration) error {
	errc := make(chan error, 1)
	req := func() { errc <- f() }
	var late <-chan time.Time
	if patience > 0 {
		t := time.NewTimer(patience)
		defer t.Stop()
		late = t.C
	}
	select {
	case s.reqs <- req:
	case <-s.quit:
		return errSpawnerStopped
	case <-late:
		select {
		case s.spare <- req: // an idle spare thread
		default:
			s.addSpare()
			select {
			case s.reqs <- req:
			case s.spare <- req:
			case <-s.quit:
				return errSpawnerStopped
			}
		}
	}
	return <-errc
}

// addSpare starts a spare thread unless there are maxSpareThreads.
func (s *spawner) addSpare() {
	s.mu.Lock()
	if len(s.tids) >= maxSpareThreads {
		s.mu.Unlock()
		return
	}
	s.tids = append(s.tids, 0) // reserved until the thread is there
	n := len(s.tids)
	s.mu.Unlock()
	ready := make(chan struct{})
	go func() {
		// never unlocked and never returning: the thread must outlive what
		// it starts
		runtime.LockOSThread()
		s.mu.Lock()
		s.tids[n-1] = unix.Gettid()
		s.mu.Unlock()
		close(ready)
		slog.Warn("the main thread has been busy for long: starting processes on a spare thread",
			"spare", n, "patience", s.patience)
		for {
			select {
			case f := <-s.spare:
				f()
			case <-s.quit:
				select {} // the supervisor is exiting
			}
		}
	}()
	<-ready
}

// spareChildren reports whether a process a spare thread started is still
// its child (running, or exited and not yet reaped). Without the kernel's
// children lists it assumes so once a spare thread exists.
func (s *spawner) spareChildren() bool {
	s.mu.Lock()
	tids := slices.Clone(s.tids)
	s.mu.Unlock()
	for _, tid := range tids {
		if pids, err := threadChildren(tid); err != nil || len(pids) > 0 {
			return true
		}
	}
	return false
}

// start starts cmd on the spawner.
func (s *spawner) start(cmd *exec.Cmd) error { return s.do(cmd.Start) }
