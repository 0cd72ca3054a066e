package tests

import (
	"bytes"
	"context"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rkt/rkt/stage0"
)

const benchRuns = 20

// median of durations, in milliseconds.
func medianMs(ds []time.Duration) float64 {
	s := append([]time.Duration{}, ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

// BenchmarkPodRunTrue: `rkt run` of /bin/true end to end (CLI, foreground,
// image already in the store), median of 20.
func BenchmarkPodRunTrue(b *testing.B) {
	pe := newPodEnv(b)
	var ds []time.Duration
	for i := 0; i < benchRuns; i++ {
		start := time.Now()
		r := pe.run("--net=none", "--pull-policy=never", pe.image, "--exec=/bin/true")
		ds = append(ds, time.Since(start))
		if r.Code != 0 {
			b.Fatalf("run: %s", r)
		}
	}
	pe.RunOK("gc", "--grace-period=0s")
	b.ReportMetric(medianMs(ds), "ms/run")
	b.Logf("rkt run /bin/true, median of %d: %.1f ms", benchRuns, medianMs(ds))
}

// BenchmarkPodLifecycle measures, in process through stage0 as the CRI
// server calls it, the median of 20 of: sandbox start, app add+start, exec,
// app stop+rm; and the supervisor's RSS per pod.
func BenchmarkPodLifecycle(b *testing.B) {
	pe := newPodEnv(b)
	rt := newInProcessRuntime(b, pe)
	ctx := context.Background()
	var sandbox, addStart, exec, stopRm []time.Duration
	var rss, anon []float64
	for i := 0; i < benchRuns; i++ {
		t0 := time.Now()
		uuid, err := rt.Sandbox(ctx, stage0.PodOptions{})
		sandbox = append(sandbox, time.Since(t0))
		if err != nil {
			b.Fatalf("sandbox: %v", err)
		}
		pe.TrackPod(uuid)
		t0 = time.Now()
		if _, err := rt.AddApp(ctx, uuid, stage0.AppOptions{Name: "app", Image: pe.image, Exec: []string{"/bin/sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait"}}); err != nil {
			b.Fatalf("add: %v", err)
		}
		if err := rt.StartApp(ctx, uuid, "app"); err != nil {
			b.Fatalf("start: %v", err)
		}
		addStart = append(addStart, time.Since(t0))
		var out bytes.Buffer
		t0 = time.Now()
		code, err := rt.Exec(ctx, uuid, stage0.ExecOptions{App: "app", Args: []string{"/bin/true"}, Stdout: &out})
		exec = append(exec, time.Since(t0))
		if err != nil || code != 0 {
			b.Fatalf("exec: %d %v", code, err)
		}
		ps, err := rt.Status(ctx, uuid)
		if err != nil {
			b.Fatal(err)
		}
		r, a := procRSS(ps.Stage1PID)
		rss, anon = append(rss, r), append(anon, a)
		t0 = time.Now()
		if err := rt.StopApp(ctx, uuid, "app", stage0.StopOptions{Timeout: time.Second}); err != nil {
			b.Fatalf("stop app: %v", err)
		}
		if err := rt.RemoveApp(ctx, uuid, "app"); err != nil {
			b.Fatalf("rm app: %v", err)
		}
		stopRm = append(stopRm, time.Since(t0))
		if err := rt.Remove(ctx, uuid, true); err != nil {
			b.Fatalf("remove: %v", err)
		}
	}
	sort.Float64s(rss)
	sort.Float64s(anon)
	b.ReportMetric(medianMs(sandbox), "ms/sandbox")
	b.ReportMetric(medianMs(addStart), "ms/add+start")
	b.ReportMetric(medianMs(exec), "ms/exec")
	b.ReportMetric(medianMs(stopRm), "ms/stop+rm")
	b.ReportMetric(rss[len(rss)/2], "KiB-stage1-RSS")
	b.Logf("median of %d: sandbox %.1f ms, app add+start %.1f ms, exec %.1f ms, app stop+rm %.1f ms; stage1 RSS %.0f KiB (anon %.0f KiB)",
		benchRuns, medianMs(sandbox), medianMs(addStart), medianMs(exec), medianMs(stopRm), rss[len(rss)/2], anon[len(anon)/2])
}

// procRSS returns VmRSS and RssAnon of pid in KiB.
func procRSS(pid int) (rss, anon float64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = v
		case "RssAnon:":
			anon = v
		}
	}
	return rss, anon
}
