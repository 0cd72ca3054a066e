package stage0

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Fatal("no Threads in /proc/self/status")
	return 0
}

// TestReapWhenExitedHoldsNoThread: waiting for many long-lived children
// holds no OS thread per child, and each is reaped (no zombie) when it exits.
func TestReapWhenExitedHoldsNoThread(t *testing.T) {
	const n = 60
	before := threads(t)
	var cmds []*exec.Cmd
	var dones []<-chan struct{}
	for i := 0; i < n; i++ {
		pidfd := -1
		cmd := exec.Command("sleep", "1")
		cmd.SysProcAttr = &syscall.SysProcAttr{PidFD: &pidfd}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		dones = append(dones, reapWhenExited(cmd, pidfd))
	}
	time.Sleep(100 * time.Millisecond)
	during := threads(t)
	for i, d := range dones {
		select {
		case <-d:
		case <-time.After(10 * time.Second):
			t.Fatalf("child %d not reaped", cmds[i].Process.Pid)
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(cmds[i].Process.Pid)); err == nil {
			t.Errorf("child %d still exists after it was reaped", cmds[i].Process.Pid)
		}
	}
	t.Logf("threads: %d before, %d while waiting for %d children", before, during, n)
	if during > before+20 {
		t.Errorf("%d threads while waiting for %d children (%d before)", during, n, before)
	}
}
