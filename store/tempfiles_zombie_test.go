package store

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A killed owner that its parent has not reaped yet is gone: its files are
// stale.
func TestProcessStartZombie(t *testing.T) {
	if processStart(os.Getpid()) == "" {
		t.Fatal("no start time for this process")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	pid := cmd.Process.Pid
	defer cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if s := string(b); strings.Contains(s[strings.LastIndexByte(s, ')')+1:], " Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not become a zombie: %s", pid, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := processStart(pid); st != "" {
		t.Fatalf("zombie %d has start time %q, want none", pid, st)
	}
}
