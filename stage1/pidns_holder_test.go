package main

import (
	"os"
	"os/exec"
	"path/filepath"
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
	s := startTestSpawner(t)
	for _, inUserNS := range []bool{false, true} {
		t.Run(map[bool]string{false: "pidns", true: "userns"}[inUserNS], func(t *testing.T) {
			userns := ""
			if inUserNS {
				userns = nsOwner(t, syscall.CLONE_NEWUSER) + "user"
			}
			h, err := startPIDNSHolder(s, userns, "", filepath.Join(t.TempDir(), "root"))
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

// TestPIDNSHolderConfined: the init of a pod's shared PID namespace is
// every app's /proc/1, and an app with CAP_SYS_PTRACE may open
// /proc/1/root or attach to it: it runs in the pod's network namespace,
// in an empty root (no host files, no host mounts in its mountinfo), with
// no capabilities and no way to gain any. So too inside the pod's user
// namespace.
func TestPIDNSHolderConfined(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	s := startTestSpawner(t)
	for _, inUserNS := range []bool{false, true} {
		t.Run(map[bool]string{false: "pidns", true: "userns"}[inUserNS], func(t *testing.T) {
			netns := nsOwner(t, syscall.CLONE_NEWNET) + "net"
			userns := ""
			if inUserNS {
				userns = nsOwner(t, syscall.CLONE_NEWUSER) + "user"
			}
			root := filepath.Join(t.TempDir(), "root")
			h, err := startPIDNSHolder(s, userns, netns, root)
			if err != nil {
				t.Fatal(err)
			}
			defer h.stop()
			init := h.pid
			if inUserNS { // PID 1 is the holder's child
				deadline := time.Now().Add(5 * time.Second)
				for {
					b, _ := os.ReadFile("/proc/" + strconv.Itoa(h.pid) + "/task/" + strconv.Itoa(h.pid) + "/children")
					if f := strings.Fields(string(b)); len(f) == 1 {
						init, _ = strconv.Atoi(f[0])
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the holder has no child")
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			proc := "/proc/" + strconv.Itoa(init)
			// it confines itself after it starts
			deadline := time.Now().Add(5 * time.Second)
			for {
				if r, _ := os.Readlink(proc + "/root"); r == root {
					break
				}
				if time.Now().After(deadline) {
					r, err := os.Readlink(proc + "/root")
					t.Fatalf("its root is %q (%v), want the empty %s", r, err, root)
				}
				time.Sleep(10 * time.Millisecond)
			}
			var got, want syscall.Stat_t
			if err := syscall.Stat(proc+"/ns/net", &got); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Stat(netns, &want); err != nil {
				t.Fatal(err)
			}
			if got.Ino != want.Ino {
				t.Errorf("it is in network namespace %d, not the pod's %d", got.Ino, want.Ino)
			}
			status, err := os.ReadFile(proc + "/status")
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range []string{"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
				"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1"} {
				if !strings.Contains(string(status), line+"\n") {
					t.Errorf("its status lacks %q:\n%s", line, status)
				}
			}
			if mi, err := os.ReadFile(proc + "/mountinfo"); err != nil || strings.Count(string(mi), "\n") > 1 {
				t.Errorf("its mountinfo shows %d mounts (%v); want at most the one its empty root is on:\n%s", strings.Count(string(mi), "\n"), err, mi)
			}
			// still the namespace's init: a process in it is reaped
			if _, err := h.runInNS(s, "/bin/sh", "-c", "sleep 0 & wait"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// startTestSpawner runs a spawner on a locked thread, as main does (a
// holder dies with its parent thread), until the test ends.
func startTestSpawner(t *testing.T) *spawner {
	s := newSpawner()
	go func() {
		runtime.LockOSThread()
		s.loop()
	}()
	t.Cleanup(s.stop)
	return s
}

// nsOwner starts a process in new namespaces of flags (a user namespace
// mapped to 200000-265535), for the test's life, and returns the directory
// of its namespace files.
func nsOwner(t *testing.T, flags uintptr) string {
	t.Helper()
	owner := exec.Command("sleep", "1000")
	owner.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags}
	if flags&syscall.CLONE_NEWUSER != 0 {
		owner.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 200000, Size: 65536}}
		owner.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 200000, Size: 65536}}
	}
	if err := owner.Start(); err != nil {
		t.Skipf("cannot create a namespace: %v", err)
	}
	t.Cleanup(func() { owner.Process.Kill(); owner.Wait() })
	return "/proc/" + strconv.Itoa(owner.Process.Pid) + "/ns/"
}
