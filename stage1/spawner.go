package main

import (
	"errors"
	"os/exec"
)

// spawner runs every process start on the main thread. The kernel sends a
// child its parent-death signal when the *thread* that forked it ends, and
// Go ends threads (a locked goroutine that returns), but never the main
// thread. Apps (and exec'd processes) get SIGKILL as parent-death signal in
// `stage1 init`, and their parent is this thread (nsexec clones them with
// CLONE_PARENT), so they die with the supervisor and only then. The same
// thread re-executes the supervisor (refresh.go): execve keeps the children
// of the thread that calls it.
type spawner struct {
	reqs chan func()
	quit chan struct{}
}

var errSpawnerStopped = errors.New("the supervisor is exiting")

func newSpawner() *spawner { return &spawner{reqs: make(chan func()), quit: make(chan struct{})} }

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

// do runs f on the main thread and returns its error.
func (s *spawner) do(f func() error) error {
	errc := make(chan error, 1)
	select {
	case s.reqs <- func() { errc <- f() }:
	case <-s.quit:
		return errSpawnerStopped
	}
	return <-errc
}

// start starts cmd on the main thread.
func (s *spawner) start(cmd *exec.Cmd) error { return s.do(cmd.Start) }
