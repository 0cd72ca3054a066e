package main

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage0"
)

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// memKB reads a kB field of pid's /proc file.
func memKB(tb testing.TB, pid int, file, field string) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), file))
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// BenchmarkStage1 reports, median of 20: supervisor start (to ready), app
// start (StartApp until the process runs), app stop (SIGKILL until the exit
// is recorded), exec of /bin/true; and the supervisor's RSS with one app
// (RSS, and its anonymous part: the rest is the binary's pages, shared by
// every pod).
func BenchmarkStage1(b *testing.B) {
	const n = 20
	var ready, start, stop, execT []time.Duration
	var rss, anon int
	for range b.N {
		for i := range n {
			p := newPod(b, nil)
			p.addApp("a", schema.App{}, []string{"sleep", "1000"}, nil)
			t0 := time.Now()
			p.mustStart(modeSandbox)
			ready = append(ready, time.Since(t0))
			if i == 0 {
				for j := range n {
					t0 = time.Now()
					if err := p.client.StartApp(ctx(b), "a"); err != nil {
						b.Fatal(err)
					}
					start = append(start, time.Since(t0))
					if j == 0 {
						time.Sleep(200 * time.Millisecond)
						rss = memKB(b, p.cmd.Process.Pid, "status", "VmRSS")
						anon = memKB(b, p.cmd.Process.Pid, "status", "RssAnon")
						for range n {
							t0 = time.Now()
							if _, code := p.exec("a", "true"); code != 0 {
								b.Fatal("exec true failed")
							}
							execT = append(execT, time.Since(t0))
						}
					}
					t0 = time.Now()
					if err := p.client.StopApp(ctx(b), "a", 0); err != nil {
						b.Fatal(err)
					}
					stop = append(stop, time.Since(t0))
				}
			}
			if err := p.client.Shutdown(ctx(b), 0); err != nil {
				b.Fatal(err)
			}
			p.waitExit(10 * time.Second)
		}
	}
	b.ReportMetric(float64(median(ready).Microseconds())/1000, "ready-ms")
	b.ReportMetric(float64(median(start).Microseconds())/1000, "appstart-ms")
	b.ReportMetric(float64(median(stop).Microseconds())/1000, "appstop-ms")
	b.ReportMetric(float64(median(execT).Microseconds())/1000, "exec-ms")
	b.ReportMetric(float64(rss), "supervisor-rss-kB")
	b.ReportMetric(float64(anon), "supervisor-anon-kB")
}

// BenchmarkPrestart reports, median of 20 apps of one pod each: the
// prestart (PrestartApp until the container's init waits on its exec
// fifo), the start of a prestarted app (StartApp until its process runs),
// and the prestart of an app under stage0's default seccomp profile (what
// a CRI container without a profile gets), the apps of each kind in turn.
func BenchmarkPrestart(b *testing.B) {
	const n = 20
	variants := []struct {
		metric string
		edit   func(*specs.Spec)
	}{
		{"prestart-ms", nil},
		{"prestart-seccomp-ms", func(s *specs.Spec) {
			s.Linux.Seccomp = stage0.DefaultSeccomp(s.Process.Capabilities.Bounding)
		}},
	}
	pre := make([][]time.Duration, len(variants))
	var start []time.Duration
	for range b.N {
		p := newPod(b, nil)
		p.mustStart(modeSandbox)
		for i := range n * len(variants) {
			v := i % len(variants)
			name := "a" + strconv.Itoa(i)
			p.addApp(name, schema.App{}, []string{"sleep", "1000"}, variants[v].edit)
			t0 := time.Now()
			if err := p.client.PrestartApp(ctx(b), p.app(name)); err != nil {
				b.Fatal(err)
			}
			if _, err := p.client.Status(ctx(b)); err != nil { // waits for the prestart
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := p.client.StartApp(ctx(b), name); err != nil {
				b.Fatal(err)
			}
			pre[v] = append(pre[v], t1.Sub(t0))
			if v == 0 {
				start = append(start, time.Since(t1))
			}
			if err := p.client.StopApp(ctx(b), name, 0); err != nil {
				b.Fatal(err)
			}
			if err := p.client.RemoveApp(ctx(b), name); err != nil {
				b.Fatal(err)
			}
		}
		if err := p.client.Shutdown(ctx(b), 0); err != nil {
			b.Fatal(err)
		}
		p.waitExit(10 * time.Second)
	}
	for v := range variants {
		b.ReportMetric(float64(median(pre[v]).Microseconds())/1000, variants[v].metric)
	}
	b.ReportMetric(float64(median(start).Microseconds())/1000, "start-ms")
}
