package main

import (
	"os/exec"
	"runtime"
)

// spawner runs every process start on one OS thread that never exits. The
// kernel sends a child its parent-death signal when the *thread* that forked
// it ends, and Go ends threads (a locked goroutine that returns). Apps (and
// exec'd processes) get SIGKILL as parent-death signal in `stage1 init`, and
// their parent is this thread (nsexec clones them with CLONE_PARENT), so
// they die with the supervisor and only then.
type spawner struct{ reqs chan func() }

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan func())}
	go func() {
		runtime.LockOSThread()
		for f := range s.reqs {
			f()
		}
	}()
	return s
}

// do runs f on the spawner's thread and returns its error.
func (s *spawner) do(f func() error) error {
	errc := make(chan error, 1)
	s.reqs <- func() { errc <- f() }
	return <-errc
}

// start starts cmd on the spawner's thread.
func (s *spawner) start(cmd *exec.Cmd) error { return s.do(cmd.Start) }
