package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRaiseLastPID: the pod's PID namespace hands out PIDs above the
// raised last PID, and a lower one changes nothing.
func TestRaiseLastPID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	s := startTestSpawner(t)
	h, err := startPIDNSHolder(s, "", "", filepath.Join(t.TempDir(), "root"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.stop()
	next := func() int {
		t.Helper()
		// sh's own PID in the namespace: the next one handed out
		out, err := h.runInNS(s, "/bin/sh", "-c", "echo $$")
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("sh printed %q", out)
		}
		return n
	}
	if n := next(); n > 100 {
		t.Fatalf("a new namespace handed out PID %d", n)
	}
	if err := h.raiseLastPID(s, 5000); err != nil {
		t.Fatal(err)
	}
	if n := next(); n != 5001 {
		t.Errorf("after raising the last PID to 5000 a process got PID %d, want 5001", n)
	}
	if err := h.raiseLastPID(s, 100); err != nil {
		t.Fatal(err)
	}
	if n := next(); n != 5003 { // the raise's own process took 5002
		t.Errorf("after a lower raise a process got PID %d, want 5003", n)
	}
	// the spawner's thread is back in the supervisor's namespace
	var nsOut []byte
	if err := s.do(func() (err error) {
		nsOut, err = exec.Command("readlink", "/proc/self/ns/pid").Output()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if own, _ := os.Readlink("/proc/self/ns/pid"); strings.TrimSpace(string(nsOut)) != own {
		t.Errorf("a child of the spawner runs in PID namespace %s, the supervisor in %s", nsOut, own)
	}
	if err := h.raiseLastPID(s, 1<<30); err == nil || !strings.Contains(err.Error(), "bad PID") {
		t.Errorf("raising to 1<<30: %v, want a bad PID error", err)
	}
}
