package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// libcontainer's parent-death signal does not reach a container's init
// (nsexec clones it with CLONE_PARENT, which clears it), so a SIGKILLed
// supervisor would leave its apps running. A watchdog child (`stage1
// watchdog`) gets SIGTERM from the kernel when the supervisor dies and then
// does what `stage1 gc` does: kills the pod's processes, destroys its
// containers and cgroups and records the apps as exited. A clean supervisor
// exit kills the watchdog first.

// spawner runs process starts on one OS thread that never exits: a
// parent-death signal fires when the thread that forked the child ends, and
// Go may end threads (a locked goroutine that returns).
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

// start starts cmd on the spawner's thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	s.reqs <- func() { errc <- cmd.Start() }
	return <-errc
}

// startWatchdog starts the watchdog of the pod at podDir.
func startWatchdog(s *spawner, podDir string) (*exec.Cmd, error) {
	cmd := exec.Command("/proc/self/exe", "watchdog", "--pod-dir="+podDir)
	if debug {
		cmd.Args = append(cmd.Args, "--debug")
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := s.start(cmd); err != nil {
		return nil, fmt.Errorf("cannot start the pod watchdog: %w", err)
	}
	return cmd, nil
}

// runWatchdog is `stage1 watchdog`: wait for the supervisor's death, then
// clean the pod. It works on the pod directory through a file descriptor,
// since stage0 may rename the directory once the supervisor is gone.
func runWatchdog(podDir string) error {
	parent := os.Getppid()
	dir, err := os.Open(podDir)
	if err != nil {
		return fmt.Errorf("cannot open pod directory: %w", err)
	}
	fdPath := "/proc/self/fd/" + strconv.Itoa(int(dir.Fd()))
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	// The supervisor may have died before the signal was armed.
	if os.Getppid() == parent {
		for range sigs {
			if os.Getppid() != parent {
				break
			}
		}
	}
	logf("watchdog: the supervisor died; cleaning the pod")
	return gcPod(fdPath)
}
