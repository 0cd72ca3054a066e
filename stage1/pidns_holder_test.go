package main

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPIDNSHolderStopSignals: the holder of a pod's PID namespace, which
// takes the pod's processes with it when it dies, is ended by SIGKILL
// only: not by the stop signals that a process group or a unit's stop
// sends its supervisor, which stops the apps gracefully. So too when the
// namespace is made inside the pod's user namespace, where the holder is
// PID 1's parent.
func TestPIDNSHolderStopSignals(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	s := newSpawner()
	go func() {
		runtime.LockOSThread()
		s.loop()
	}()
	defer s.stop()
	for _, inUserNS := range []bool{false, true} {
		t.Run(map[bool]string{false: "pidns", true: "userns"}[inUserNS], func(t *testing.T) {
			userns := ""
			if inUserNS {
				owner := exec.Command("sleep", "1000")
				owner.SysProcAttr = &syscall.SysProcAttr{
					Cloneflags:  syscall.CLONE_NEWUSER,
					UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 200000, Size: 65536}},
					GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 200000, Size: 65536}},
				}
				if err := owner.Start(); err != nil {
					t.Skipf("cannot create a user namespace: %v", err)
				}
				defer func() { owner.Process.Kill(); owner.Wait() }()
				userns = "/proc/" + strconv.Itoa(owner.Process.Pid) + "/ns/user"
			}
			h, err := startPIDNSHolder(s, userns)
			if err != nil {
				t.Fatal(err)
			}
			defer h.stop()
			// a process in the namespace, as an app
			out, err := h.runInNS(s, "/bin/sh", "-c", "sleep 1000 >/dev/null 2>&1 & echo $!")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
				t.Fatalf("sh printed %q", out)
			}
			for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
				if err := syscall.Kill(h.pid, sig); err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond)
				var ws syscall.WaitStatus
				if pid, _ := syscall.Wait4(h.pid, &ws, syscall.WNOHANG, nil); pid == h.pid {
					h.cmd.Process.Release()
					h.cmd = nil
					t.Fatalf("%v ended the holder (%v), and with it the pod's processes", sig, ws.Signal())
				}
			}
		})
	}
}
