package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/fileperm"
)

// pidnsHolder is the init (PID 1) of a pod's shared PID namespace: a child
// of the supervisor (`stage1 pidns`, in C: pidns_holder.go) that only
// reaps orphans. The supervisor itself stays outside, so its /proc matches
// its PID namespace. When the
// holder dies the kernel kills every process in the namespace.
type pidnsHolder struct {
	pid int
	cmd *exec.Cmd // nil after a refresh
	// inUserNS: the namespace was created inside the pod's user namespace
	// by cmd, which is not its PID 1 (see pidns_holder.go).
	inUserNS bool
}

// startPIDNSHolder starts the holder; with userns (the pod's user namespace)
// the PID namespace is created inside it. It runs in the pod's network
// namespace netns (the host's if ""), chrooted into root, an empty
// directory it makes, with no capabilities.
func startPIDNSHolder(s *spawner, userns, netns, root string) (*pidnsHolder, error) {
	if err := os.Mkdir(root, fileperm.Private.DirMode()); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("cannot create the root of the shared PID namespace's init: %w", err)
	}
	cmd := exec.Command("/proc/self/exe", "pidns")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWPID,
		Pdeathsig:  syscall.SIGKILL,
	}
	cmd.Env = append(os.Environ(), pidnsNetnsEnv+"="+netns, pidnsRootEnv+"="+root)
	if userns != "" {
		cmd.SysProcAttr.Cloneflags = 0
		cmd.Env = append(cmd.Env, pidnsUsernsEnv+"="+userns)
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := s.start(cmd); err != nil {
		return nil, fmt.Errorf("cannot start the shared PID namespace: %w", err)
	}
	return &pidnsHolder{pid: cmd.Process.Pid, cmd: cmd, inUserNS: userns != ""}, nil
}

func (h *pidnsHolder) nsPath() string {
	if h.inUserNS {
		return "/proc/" + strconv.Itoa(h.pid) + "/ns/pid_for_children"
	}
	return "/proc/" + strconv.Itoa(h.pid) + "/ns/pid"
}

// stop kills the holder, and with it everything left in the namespace.
func (h *pidnsHolder) stop() {
	if h.cmd != nil {
		h.cmd.Process.Kill()
		h.cmd.Wait()
		return
	}
	syscall.Kill(h.pid, syscall.SIGKILL)
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(h.pid, &ws, 0, nil); err != syscall.EINTR {
			return
		}
	}
}

// raiseLastPID makes the namespace hand out PIDs above last from now on
// (CRIU recreates dumped processes with their PIDs: a new process must not
// take one a pending restore needs). The writer must be in the namespace.
func (h *pidnsHolder) raiseLastPID(s *spawner, last uint32) error {
	if _, err := h.runInNS(s, "/proc/self/exe", "pidns-last-pid", strconv.FormatUint(uint64(last), 10)); err != nil {
		return fmt.Errorf("cannot raise the last PID of the pod's PID namespace to %d: %w", last, err)
	}
	return nil
}

// runInNS runs a command in the namespace and returns its output. The
// spawner's thread joins the namespace for its children while it starts the
// command, then goes back to its own.
func (h *pidnsHolder) runInNS(s *spawner, name string, args ...string) ([]byte, error) {
	var stdout, stderr strings.Builder
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := s.do(func() error {
		own, err := unix.Open("/proc/thread-self/ns/pid", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(own)
		pod, err := unix.Open(h.nsPath(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		err = unix.Setns(pod, unix.CLONE_NEWPID)
		unix.Close(pod)
		if err != nil {
			return fmt.Errorf("cannot join %s: %w", h.nsPath(), err)
		}
		err = cmd.Start()
		if serr := unix.Setns(own, unix.CLONE_NEWPID); serr != nil {
			// children of this thread would start in the pod: a bug
			panic(fmt.Sprintf("cannot leave the PID namespace of the pod: %v", serr))
		}
		return err
	})
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		return nil, fmt.Errorf("%s in the pod's PID namespace: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	return []byte(stdout.String()), nil
}
