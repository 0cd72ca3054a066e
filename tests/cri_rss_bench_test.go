package tests

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// rssParts is a process's resident memory by kind of mapping, in KiB.
type rssParts struct {
	text, rodata, data int // the executable's code, read-only data (rodata, pclntab) and data
	anon, libs         int // anonymous memory (heap, stacks, runtime); other files
	rss, pss           int
}

// readRSSParts sums /proc/<pid>/smaps by kind of mapping; exe is the
// path of the process's executable.
func readRSSParts(pid int, exe string) rssParts {
	var p rssParts
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return p
	}
	defer f.Close()
	var kind *int
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			path := ""
			if len(fields) >= 6 {
				path = fields[5]
			}
			switch {
			case path == exe && strings.HasPrefix(fields[1], "r-x"):
				kind = &p.text
			case path == exe && strings.HasPrefix(fields[1], "rw"):
				kind = &p.data
			case path == exe:
				kind = &p.rodata
			case path == "" || strings.HasPrefix(path, "["):
				kind = &p.anon
			default:
				kind = &p.libs
			}
			continue
		}
		if len(fields) < 2 {
			continue
		}
		n, _ := strconv.Atoi(fields[1])
		switch fields[0] {
		case "Rss:":
			*kind += n
			p.rss += n
		case "Pss:":
			p.pss += n
		}
	}
	return p
}

func (p rssParts) String() string {
	return fmt.Sprintf("RSS %6d KiB (PSS %6d): text %5d, rodata+pclntab %5d, data %4d, anonymous %5d, other files %4d",
		p.rss, p.pss, p.text, p.rodata, p.data, p.anon, p.libs)
}

// BenchmarkServiceRSS measures the kubelet-service's resident memory, by
// kind of mapping, when idle: after start and an image pull, then after a
// kubelet's calls on the empty node (the service drops the binary's pages
// after start and pulls: pkg/exepages; the calls fault back what they
// run), at 10 running pods, and at 10 pods after a kubelet's worth of calls
// (relists, status and stats). The work is fixed (it does not scale with
// b.N).
func BenchmarkServiceRSS(b *testing.B) {
	requireRoot(b)
	env := testutil.NewEnv(b)
	svc := startCRIService(b, env, "--log-level=warn")
	// RKT_BENCH_SVC_LOG=file keeps the service's log there (with
	// GODEBUG=gctrace=1 in the environment: its GCs).
	if keep := os.Getenv("RKT_BENCH_SVC_LOG"); keep != "" {
		b.Cleanup(func() { os.WriteFile(keep, []byte(svc.Log()), 0o600) })
	}
	c := dialCRI(b, svc)
	pid, exe := svc.cmd.Process.Pid, testutil.RKTBin(b)
	_, err := c.Version(context.Background(), &runtimeapi.VersionRequest{})
	must(b, "Version", err)
	time.Sleep(time.Second)
	empty := readRSSParts(pid, exe)

	_, imgID := pullTestImage(b, c)
	logDir := podLogDir(b, c)
	ctx := context.Background()

	time.Sleep(time.Second)
	idle := readRSSParts(pid, exe)
	emptyNodeCalls(b, c, 60)
	time.Sleep(time.Second)
	polled := readRSSParts(pid, exe)

	var pods, ctrs []string
	for i := 0; i < 10; i++ {
		p, ct := runPodWithContainer(b, c, fmt.Sprintf("rss-%d", i), imgID, logDir)
		pods, ctrs = append(pods, p), append(ctrs, ct)
	}
	time.Sleep(6 * time.Second) // a stats refresh of every pod
	at10 := readRSSParts(pid, exe)

	// about a minute of a kubelet's calls at 10 pods
	for i := 0; i < 60; i++ {
		for _, call := range []func() error{
			func() error { _, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{}); return err },
			func() error { _, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); return err },
			func() error {
				_, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: pods[i%10]})
				return err
			},
			func() error {
				_, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctrs[i%10]})
				return err
			},
			func() error { _, err := c.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{}); return err },
			func() error {
				_, err := c.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{})
				return err
			},
			func() error { _, err := c.Status(ctx, &runtimeapi.StatusRequest{}); return err },
		} {
			must(b, "CRI call", call())
		}
	}
	time.Sleep(2 * time.Second)
	after := readRSSParts(pid, exe)

	fmt.Printf("BenchmarkServiceRSS: kubelet-service (%s)\n", exe)
	fmt.Printf("  idle after start           %v\n", empty)
	fmt.Printf("  idle after start and pull  %v\n", idle)
	fmt.Printf("  then 420 calls, no pods    %v\n", polled)
	fmt.Printf("  idle at 10 pods            %v\n", at10)
	fmt.Printf("  10 pods, after 420 calls   %v\n", after)
	b.ReportMetric(float64(idle.rss)/1024, "idle-rss-MiB")
	b.ReportMetric(float64(polled.rss)/1024, "idle-polled-rss-MiB")
	b.ReportMetric(float64(at10.rss)/1024, "10pods-rss-MiB")
	b.ReportMetric(float64(after.rss)/1024, "10pods-calls-rss-MiB")
	b.ReportMetric(float64(idle.anon)/1024, "idle-anon-MiB")
}

// emptyNodeCalls makes rounds of the calls a kubelet makes on a node
// without pods (relists, status, image and stats lists), about a second's
// worth each.
func emptyNodeCalls(tb testing.TB, c *criClient, rounds int) {
	tb.Helper()
	ctx := context.Background()
	for i := 0; i < rounds; i++ {
		for _, call := range []func() error{
			func() error { _, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{}); return err },
			func() error { _, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); return err },
			func() error { _, err := c.Status(ctx, &runtimeapi.StatusRequest{}); return err },
			func() error { _, err := c.ListImages(ctx, &runtimeapi.ListImagesRequest{}); return err },
			func() error { _, err := c.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{}); return err },
			func() error { _, err := c.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{}); return err },
			func() error {
				_, err := c.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{})
				return err
			},
		} {
			must(tb, "CRI call", call())
		}
	}
}
