package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// latencies collects durations per RPC.
type latencies map[string][]time.Duration

func (l latencies) time(name string, f func() error) error {
	start := time.Now()
	err := f()
	l[name] = append(l[name], time.Since(start))
	return err
}

// percentile returns the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p/100+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

// report prints a table (on stdout: go test truncates long benchmark logs)
// and reports each p50/p99 as a metric.
func (l latencies) report(b *testing.B, title string, order []string) {
	fmt.Printf("BenchmarkCRI: %s (ms):\n", title)
	fmt.Printf("  %-22s %8s %8s %5s\n", "rpc", "p50", "p99", "n")
	for _, name := range order {
		ds := l[name]
		if len(ds) == 0 {
			continue
		}
		p50, p99 := percentile(ds, 50), percentile(ds, 99)
		fmt.Printf("  %-22s %8.2f %8.2f %5d\n", name, ms(p50), ms(p99), len(ds))
		b.ReportMetric(ms(p50), name+"-p50-ms")
		b.ReportMetric(ms(p99), name+"-p99-ms")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// rssKB returns the resident set size of pid in KiB.
func rssKB(pid int) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// BenchmarkCRI measures the kubelet-service: per-RPC latency (p50/p99) of
// the pod and container lifecycle (20 rounds), List*/Status at 100 running
// pods, the service's RSS idle and at 10 and 100 pods, and stage1's RSS
// per pod. The work is fixed (it does not scale with b.N).
func BenchmarkCRI(b *testing.B) {
	requireRoot(b)
	env := testutil.NewEnv(b)
	svc := startCRIService(b, env, "--log-level=warn")
	c := dialCRI(b, svc)
	_, imgID := pullTestImage(b, c)
	logDir := podLogDir(b, c)
	pid := svc.cmd.Process.Pid
	time.Sleep(500 * time.Millisecond)
	idleRSS := rssKB(pid)
	ctx := context.Background()

	lat := latencies{}
	for i := 0; i < 20; i++ {
		pc := podConfig(fmt.Sprintf("bench-life-%d", i), logDir)
		var podID, ctrID string
		steps := []struct {
			name string
			f    func() error
		}{
			{"RunPodSandbox", func() error {
				r, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
				if err == nil {
					podID = r.PodSandboxId
				}
				return err
			}},
			{"CreateContainer", func() error {
				r, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podID,
					Config: containerConfig("bench", imgID, "sleep", "100000"), SandboxConfig: pc})
				if err == nil {
					ctrID = r.ContainerId
				}
				return err
			}},
			{"StartContainer", func() error {
				_, err := c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctrID})
				return err
			}},
			{"ContainerStatus", func() error {
				_, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctrID})
				return err
			}},
			{"ExecSync", func() error {
				_, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ctrID, Cmd: []string{"true"}, Timeout: 10})
				return err
			}},
			{"StopContainer", func() error {
				_, err := c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: ctrID, Timeout: 10})
				return err
			}},
			{"RemoveContainer", func() error {
				_, err := c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ctrID})
				return err
			}},
			{"StopPodSandbox", func() error {
				_, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID})
				return err
			}},
			{"RemovePodSandbox", func() error {
				_, err := c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID})
				return err
			}},
		}
		for _, s := range steps {
			if err := lat.time(s.name, s.f); err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
		}
	}
	order := []string{"RunPodSandbox", "CreateContainer", "StartContainer", "ContainerStatus", "ExecSync",
		"StopContainer", "RemoveContainer", "StopPodSandbox", "RemovePodSandbox"}
	lat.report(b, "pod and container lifecycle, 20 rounds", order)

	var rss10 int
	var pods, ctrs []string
	for i := 0; i < 100; i++ {
		p, ct := runPodWithContainer(b, c, fmt.Sprintf("bench-%d", i), imgID, logDir)
		pods, ctrs = append(pods, p), append(ctrs, ct)
		if i == 9 {
			time.Sleep(200 * time.Millisecond)
			rss10 = rssKB(pid)
		}
	}
	time.Sleep(200 * time.Millisecond)
	rss100 := rssKB(pid)

	at100 := latencies{}
	for i := 0; i < 30; i++ {
		must(b, "ListPodSandbox", at100.time("ListPodSandbox", func() error {
			_, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
			return err
		}))
		must(b, "ListContainers", at100.time("ListContainers", func() error {
			_, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
			return err
		}))
		must(b, "PodSandboxStatus", at100.time("PodSandboxStatus", func() error {
			_, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: pods[i]})
			return err
		}))
		must(b, "ContainerStatus", at100.time("ContainerStatus", func() error {
			_, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctrs[i]})
			return err
		}))
		must(b, "ListContainerStats", at100.time("ListContainerStats", func() error {
			_, err := c.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{})
			return err
		}))
		must(b, "Status", at100.time("Status", func() error {
			_, err := c.Status(ctx, &runtimeapi.StatusRequest{})
			return err
		}))
	}
	at100.report(b, "at 100 running pods, 30 calls each", []string{"ListPodSandbox", "ListContainers",
		"PodSandboxStatus", "ContainerStatus", "ListContainerStats", "Status"})

	var stage1Total, n int
	for _, p := range pods {
		st, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: p, Verbose: true})
		must(b, "PodSandboxStatus", err)
		var info struct {
			Pid int `json:"pid"`
		}
		must(b, "parse info", json.Unmarshal([]byte(st.Info["info"]), &info))
		if r := rssKB(info.Pid); r > 0 {
			stage1Total += r
			n++
		}
	}
	fmt.Printf("BenchmarkCRI: kubelet-service RSS: idle %d KiB, 10 pods %d KiB, 100 pods %d KiB; stage1 RSS per pod %d KiB (mean of %d)\n",
		idleRSS, rss10, rss100, stage1Total/max(n, 1), n)
	b.ReportMetric(float64(idleRSS)/1024, "svc-rss-idle-MiB")
	b.ReportMetric(float64(rss10)/1024, "svc-rss-10pods-MiB")
	b.ReportMetric(float64(rss100)/1024, "svc-rss-100pods-MiB")
	b.ReportMetric(float64(stage1Total/max(n, 1))/1024, "stage1-rss-MiB")
}
