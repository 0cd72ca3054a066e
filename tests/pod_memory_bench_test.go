package tests

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// BenchmarkPodMemory runs 10 pods with a container each through the
// kubelet-service, uses each once (ExecSync, status), and prints what one
// pod's own processes hold, averaged: the supervisor's PSS, RSS, anonymous
// memory and threads, and the PSS of the shared PID namespace's holder.
// The PSS sum is what BenchmarkCRIVsContainerd reports as per-pod PSS.
// RKT_BENCH_HOLD=<duration> keeps the pods running that long afterwards,
// for a look at /proc/<pid>/smaps.
func BenchmarkPodMemory(b *testing.B) {
	requireRoot(b)
	const n = 10
	env := testutil.NewEnv(b)
	svc := startCRIService(b, env, "--log-level=warn")
	c := dialCRI(b, svc)
	_, imgID := pullTestImage(b, c)
	logDir := podLogDirOf(b, svc)
	ctx := context.Background()
	var pods, ctrs []string
	for i := 0; i < n; i++ {
		p, ct := runPodWithContainer(b, c, fmt.Sprintf("mem-%d", i), imgID, logDir)
		pods, ctrs = append(pods, p), append(ctrs, ct)
	}
	for i := range pods {
		_, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ctrs[i], Cmd: []string{"true"}, Timeout: 10})
		must(b, "ExecSync", err)
		_, err = c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctrs[i]})
		must(b, "ContainerStatus", err)
	}
	time.Sleep(17 * time.Second) // an idle supervisor goes lean after 15 s
	var pss, rss, anon, threads, holder int
	var pids []string
	for _, id := range pods {
		sv := sandboxPidFromInfo(b, c, id)
		pids = append(pids, fmt.Sprint(sv))
		pss += smapsKB(sv, "Pss")
		rss += smapsKB(sv, "Rss")
		anon += smapsKB(sv, "Anonymous")
		threads += threadCount(b, sv)
		for _, ch := range childrenOf(sv) {
			if strings.HasSuffix(strings.TrimSpace(cmdline(ch)), " pidns") {
				holder += smapsKB(ch, "Pss")
			}
		}
	}
	fmt.Printf("BenchmarkPodMemory: %d pods, per pod: PSS %d KiB (supervisor %d, pidns holder %d); supervisor RSS %d KiB, anonymous %d KiB, %.1f threads\n",
		n, (pss+holder)/n, pss/n, holder/n, rss/n, anon/n, float64(threads)/n)
	b.ReportMetric(float64(pss+holder)/n/1024, "pod-pss-MiB")
	b.ReportMetric(float64(anon)/n/1024, "supervisor-anon-MiB")
	// An idle supervisor is `stage1 lean`: the first call execs the Go
	// supervisor again. Time an ExecSync on idle pods, then right after.
	var idleLat, busyLat []time.Duration
	for _, ct := range ctrs {
		for _, l := range []*[]time.Duration{&idleLat, &busyLat} {
			t0 := time.Now()
			_, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ct, Cmd: []string{"true"}, Timeout: 10})
			must(b, "ExecSync", err)
			*l = append(*l, time.Since(t0))
		}
	}
	fmt.Printf("BenchmarkPodMemory: ExecSync p50 %.2f ms on an idle pod (lean supervisor), %.2f ms right after\n",
		ms(percentile(idleLat, 50)), ms(percentile(busyLat, 50)))
	b.ReportMetric(ms(percentile(idleLat, 50)), "execsync-idle-p50-ms")
	b.ReportMetric(ms(percentile(busyLat, 50)), "execsync-busy-p50-ms")
	if d, err := time.ParseDuration(os.Getenv("RKT_BENCH_HOLD")); err == nil {
		fmt.Printf("BenchmarkPodMemory: supervisors %s; holding for %s (SIGUSR1 ends it)\n", strings.Join(pids, " "), d)
		ctx, stop := signal.NotifyContext(ctx, syscall.SIGUSR1)
		defer stop()
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
}
