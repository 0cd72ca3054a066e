package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
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
// the PID namespace is created inside it.
func startPIDNSHolder(s *spawner, userns string) (*pidnsHolder, error) {
	cmd := exec.Command("/proc/self/exe", "pidns")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWPID,
		Pdeathsig:  syscall.SIGKILL,
	}
	if userns != "" {
		cmd.SysProcAttr.Cloneflags = 0
		cmd.Env = append(os.Environ(), pidnsUsernsEnv+"="+userns)
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
