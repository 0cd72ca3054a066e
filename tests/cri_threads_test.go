package tests

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rkt/rkt/tests/testutil"
)

// threadCount returns the number of threads of process pid.
func threadCount(t testing.TB, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("cannot read the status of process %d: %v", pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("bad Threads line %q", l)
			}
			return n
		}
	}
	t.Fatalf("no Threads line in /proc/%d/status", pid)
	return 0
}

// TestCRIThreadsPerPod: the service does not keep an OS thread per pod (it
// used to block one in wait4 for every stage1 it started): its thread count
// stays bounded while pods come and go, and is back near its start value
// once they are gone.
func TestCRIThreadsPerPod(t *testing.T) {
	requireRoot(t)
	const pods = 60
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	logDir := podLogDirOf(t, svc)
	pid := svc.cmd.Process.Pid
	start := threadCount(t, pid)
	peak := start
	for i := 0; i < pods; i++ {
		runPodWithContainer(t, c, fmt.Sprintf("threads-%d", i), imgID, logDir)
		peak = max(peak, threadCount(t, pid))
	}
	withPods := threadCount(t, pid)
	removeAllPods(t, c)
	end := threadCount(t, pid)
	t.Logf("service threads: %d at start, %d with %d pods, %d at the peak, %d after removing them", start, withPods, pods, peak, end)
	if peak >= 50 {
		t.Errorf("the service had %d threads with %d pods (start: %d); want fewer than 50", peak, pods, start)
	}
	if end > start+15 {
		t.Errorf("the service kept %d threads after its %d pods were removed (start: %d)", end, pods, start)
	}
	if z := zombieChildren(pid); len(z) > 0 {
		t.Errorf("the service left its exited children unreaped: %v", z)
	}
}

// zombieChildren returns the pids of pid's children that exited and were
// not reaped.
func zombieChildren(pid int) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		st := string(b)
		if strings.Contains(st, fmt.Sprintf("\nPPid:\t%d\n", pid)) && strings.Contains(st, "\nState:\tZ") {
			out = append(out, e.Name())
		}
	}
	return out
}
