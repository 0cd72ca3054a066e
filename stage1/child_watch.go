package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// lateCriuGrace is how long a criu may run past its call's deadline
// before it is killed: the call has failed by then, while a dump holds the
// pod's apps paused and a spawner thread busy for as long as it runs, and
// a restore a spawner thread. A criu killed during a dump
// cures its parasite as the control socket closes; what a killed restore
// created is killed with its container.
const lateCriuGrace = 10 * time.Second

// Deadlines for callers that give none: a dump's, and a restore's, under
// the 2 minutes stage0 and the kubelet wait for a start.
const (
	defaultDumpTimeout    = 4 * time.Minute
	defaultRestoreTimeout = 100 * time.Second
)

// childWatch kills, grace after deadline, the processes the calling thread
// has started since it was armed, which for a spawner call that runs one
// criu is that criu, and for one that starts a container its init and
// nsexec's bootstrap (libcontainer gives no handle on them while it
// waits). It must be armed and disarmed on the thread that starts them.
type childWatch struct {
	mu       sync.Mutex
	timer    *time.Timer
	deadline time.Time
	grace    time.Duration
	done     bool          // stopped, or the kill has begun
	fired    chan struct{} // closed once the kill has ended
	killed   []int
}

// watchChildren arms a childWatch; a zero deadline arms nothing.
func watchChildren(deadline time.Time, grace time.Duration) *childWatch {
	w := &childWatch{deadline: deadline, grace: grace}
	if deadline.IsZero() {
		return w
	}
	tid := unix.Gettid()
	before, err := threadChildren(tid)
	if err != nil {
		return w // no kernel support for the children list: unbounded, as before
	}
	w.fired = make(chan struct{})
	w.timer = time.AfterFunc(time.Until(deadline.Add(grace)), func() {
		w.mu.Lock()
		if w.done { // stopped, or a second run after a tighten
			w.mu.Unlock()
			return
		}
		w.done = true
		w.mu.Unlock()
		defer close(w.fired)
		now, err := threadChildren(tid)
		if err != nil {
			return
		}
		for _, pid := range now {
			if !slices.Contains(before, pid) && unix.Kill(pid, unix.SIGKILL) == nil {
				w.killed = append(w.killed, pid)
			}
		}
	})
	return w
}

// doWatched runs f through the spawner (do) under a childWatch armed on
// the thread that runs it, and returns the PIDs the watch killed.
func (s *spawner) doWatched(deadline time.Time, grace time.Duration, f func() error) (killed []int, err error) {
	err = s.do(func() error {
		w := watchChildren(deadline, grace)
		err := f()
		killed = w.stop()
		return err
	})
	return killed, err
}

// tighten moves the watch's deadline to deadline if that is earlier (a
// caller that waits for what the watched call makes has one); a no-op on
// nil, on an unarmed watch and once stopped or fired.
func (w *childWatch) tighten(deadline time.Time) {
	if w == nil || deadline.IsZero() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer == nil || w.done || !deadline.Before(w.deadline) {
		return
	}
	w.deadline = deadline
	w.timer.Reset(time.Until(deadline.Add(w.grace)))
}

// stop disarms the watch (or waits for its kill to end) and returns the
// PIDs it killed.
func (w *childWatch) stop() []int {
	if w.timer == nil {
		return nil
	}
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		<-w.fired
		return w.killed
	}
	w.done = true
	w.mu.Unlock()
	w.timer.Stop()
	return nil
}

// threadChildren lists the children the thread tid of this process started
// (/proc/<pid>/task/<tid>/children, CONFIG_PROC_CHILDREN).
func threadChildren(tid int) ([]int, error) {
	p := fmt.Sprintf("/proc/%d/task/%d/children", os.Getpid(), tid)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", p, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s: bad pid %q", p, f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}
