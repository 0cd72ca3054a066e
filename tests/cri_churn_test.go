package tests

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// churnPods is RKT_CHURN_PODS, else a short run for make check (the issue's
// 1000 with `make chaos`).
func churnPods(t *testing.T) int {
	if s := os.Getenv("RKT_CHURN_PODS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("bad RKT_CHURN_PODS %q", s)
		}
		return n
	}
	return 100
}

// procStat returns a status field of process pid in its own unit (kB for
// memory), and the number of its open file descriptors.
func procStat(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

func fdCount(t *testing.T, pid int) int {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// TestCRIChurn: many pods created, started, stopped and removed by 10
// clients at once, with no error; the service's threads stay bounded and
// its threads, file descriptors and memory come back near idle once the
// pods are gone.
func TestCRIChurn(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	t.Cleanup(func() { removeAllPods(t, c) })
	_, img := pullTestImage(t, c)
	pid := svc.cmd.Process.Pid
	cycle := func(name string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		pc := podConfig(name, "")
		pc.LogDirectory = ""
		rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
		if err != nil {
			return fmt.Errorf("RunPodSandbox %s: %w", name, err)
		}
		cc := containerConfig("app", img, "sleep", "1000")
		cc.LogPath = ""
		cr, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, Config: cc, SandboxConfig: pc})
		if err != nil {
			return fmt.Errorf("CreateContainer in %s: %w", name, err)
		}
		if _, err := c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cr.ContainerId}); err != nil {
			return fmt.Errorf("StartContainer in %s: %w", name, err)
		}
		if _, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: rp.PodSandboxId}); err != nil {
			return fmt.Errorf("StopPodSandbox %s: %w", name, err)
		}
		if _, err := c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: rp.PodSandboxId}); err != nil {
			return fmt.Errorf("RemovePodSandbox %s: %w", name, err)
		}
		return nil
	}
	// warm up (one cycle), then measure idle
	if err := cycle("churn-warmup"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	idleThreads, idleFDs, idleRSS := procStat(t, pid, "Threads"), fdCount(t, pid), procStat(t, pid, "VmRSS")

	n := churnPods(t)
	const workers = 10
	work := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	peakThreads := idleThreads
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := cycle(fmt.Sprintf("churn-%d", i)); err != nil {
					errs <- err
				}
				th := procStat(t, pid, "Threads")
				mu.Lock()
				peakThreads = max(peakThreads, th)
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	elapsed := time.Since(start)
	for err := range errs {
		t.Error(err)
	}
	// let the Go runtime return what it can
	time.Sleep(3 * time.Second)
	threads, fds, rss := procStat(t, pid, "Threads"), fdCount(t, pid), procStat(t, pid, "VmRSS")
	t.Logf("%d pods by %d clients in %v (%.1f pods/s): threads %d idle, %d peak, %d after; fds %d idle, %d after; RSS %d MiB idle, %d MiB after",
		n, workers, elapsed.Round(time.Second), float64(n)/elapsed.Seconds(), idleThreads, peakThreads, threads, idleFDs, fds, idleRSS>>10, rss>>10)
	if peakThreads >= 50 {
		t.Errorf("threads peaked at %d (idle %d): want fewer than 50", peakThreads, idleThreads)
	}
	// Go ends none of the OS threads it made: after the burst the service
	// keeps about one per call blocked in a system call at the same time
	// (workers at most) and one per CPU, not one per pod.
	if limit := idleThreads + workers + runtime.NumCPU(); threads > limit {
		t.Errorf("%d threads after the churn, %d idle: want at most %d", threads, idleThreads, limit)
	}
	if fds > idleFDs+5 {
		t.Errorf("%d file descriptors after the churn, %d idle: a leak", fds, idleFDs)
	}
	if rss > 2*idleRSS+32<<10 {
		t.Errorf("RSS %d MiB after the churn, %d MiB idle", rss>>10, idleRSS>>10)
	}
}
