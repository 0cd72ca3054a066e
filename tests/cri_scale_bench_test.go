package tests

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// benchPodCounts returns the pod counts of BenchmarkCRIScale:
// RKT_BENCH_PODS (comma-separated), default 10 and 500.
func benchPodCounts(b *testing.B) []int {
	s := os.Getenv("RKT_BENCH_PODS")
	if s == "" {
		return []int{10, 500}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("RKT_BENCH_PODS: bad count %q", f)
		}
		out = append(out, n)
	}
	return out
}

// benchRounds is how many times BenchmarkCRIScale measures the List,
// Status and Stats calls at each pod count: RKT_BENCH_ROUNDS, default 1.
func benchRounds(b *testing.B) int {
	s := os.Getenv("RKT_BENCH_ROUNDS")
	if s == "" {
		return 1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("RKT_BENCH_ROUNDS: bad count %q", s)
	}
	return n
}

// BenchmarkCRIScale measures, at each pod count of RKT_BENCH_PODS (each pod
// a sandbox with one running container), the p50/p99 latency of the calls
// the kubelet makes all the time (List*, *Status, *Stats) and of tearing a
// pod down (StopContainer, RemoveContainer, StopPodSandbox,
// RemovePodSandbox) next to the others. The work is fixed (it does not
// scale with b.N).
func BenchmarkCRIScale(b *testing.B) {
	requireRoot(b)
	counts := benchPodCounts(b)
	env := testutil.NewEnv(b)
	// RKT_BENCH_SVC_LOG=file keeps the service's log there, at debug level:
	// each RPC's time in the service, next to the client's.
	level, keep := "warn", os.Getenv("RKT_BENCH_SVC_LOG")
	if keep != "" {
		level = "debug"
	}
	svc := startCRIService(b, env, "--log-level="+level)
	if keep != "" {
		b.Cleanup(func() { os.WriteFile(keep, []byte(svc.Log()), 0o600) })
	}
	c := dialCRI(b, svc)
	_, imgID := pullTestImage(b, c)
	logDir := b.TempDir()
	ctx := context.Background()
	var pods, ctrs []string
	b.Cleanup(func() { removePodsParallel(b, c, pods) })

	for _, n := range counts {
		start := time.Now()
		for len(pods) < n {
			p, ct := runPodWithContainer(b, c, fmt.Sprintf("scale-%d", len(pods)), imgID, logDir)
			pods, ctrs = append(pods, p), append(ctrs, ct)
		}
		fmt.Printf("BenchmarkCRIScale: %d pods running (%.1fs to create)\n", n, time.Since(start).Seconds())
		time.Sleep(2 * time.Second) // let what the new pods started settle
		if keep != "" {
			svc.logMark(fmt.Sprintf("bench: measuring at %d pods", n))
		}

		var lat latencies
		queries := []string{"ListPodSandbox", "ListContainers", "decode-ListPodSandbox", "decode-ListContainers",
			"PodSandboxStatus", "ContainerStatus", "ContainerStats", "PodSandboxStats", "ListContainerStats", "ListPodSandboxStats"}
		// "decode-List*" is this client decoding the answer it got again,
		// with no server, right after each round's calls: the lower bound
		// of the call (the client's GCs and the machine's load included)
		var podsWire, ctrsWire []byte
		rounds := benchRounds(b)
		for round := 1; round <= rounds; round++ {
			lat = latencies{}
			for i := 0; i < 200; i++ {
				p, ct := pods[i%len(pods)], ctrs[i%len(ctrs)]
				var lp *runtimeapi.ListPodSandboxResponse
				var lc *runtimeapi.ListContainersResponse
				must(b, "ListPodSandbox", lat.time("ListPodSandbox", func() (err error) {
					lp, err = c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
					return err
				}))
				must(b, "ListContainers", lat.time("ListContainers", func() (err error) {
					lc, err = c.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
					return err
				}))
				if podsWire == nil {
					podsWire, ctrsWire = mustMarshal(b, lp), mustMarshal(b, lc)
				}
				must(b, "PodSandboxStatus", lat.time("PodSandboxStatus", func() error {
					_, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: p})
					return err
				}))
				must(b, "ContainerStatus", lat.time("ContainerStatus", func() error {
					_, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ct})
					return err
				}))
				must(b, "ContainerStats", lat.time("ContainerStats", func() error {
					_, err := c.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: ct})
					return err
				}))
				must(b, "PodSandboxStats", lat.time("PodSandboxStats", func() error {
					_, err := c.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: p})
					return err
				}))
				if i%10 == 0 { // these took seconds at 500 pods: sample them less
					must(b, "ListContainerStats", lat.time("ListContainerStats", func() error {
						_, err := c.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{})
						return err
					}))
					must(b, "ListPodSandboxStats", lat.time("ListPodSandboxStats", func() error {
						_, err := c.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{})
						return err
					}))
				}
			}
			// then the same number of decodes alone (not between the
			// calls: their garbage would be collected during the calls)
			for i := 0; i < 200; i++ {
				must(b, "decode-ListPodSandbox", lat.time("decode-ListPodSandbox", func() error {
					return proto.Unmarshal(podsWire, &runtimeapi.ListPodSandboxResponse{})
				}))
				must(b, "decode-ListContainers", lat.time("decode-ListContainers", func() error {
					return proto.Unmarshal(ctrsWire, &runtimeapi.ListContainersResponse{})
				}))
			}
			if rounds > 1 {
				lat.report(b, fmt.Sprintf("at %d running pods, round %d of %d", n, round, rounds), queries)
			}
		}
		// tear down 10 extra pods, one call at a time
		for i := 0; i < 10; i++ {
			p, ct := runPodWithContainer(b, c, fmt.Sprintf("scale-extra-%d-%d", n, i), imgID, logDir)
			must(b, "StopContainer", lat.time("StopContainer", func() error {
				_, err := c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: ct, Timeout: 10})
				return err
			}))
			must(b, "RemoveContainer", lat.time("RemoveContainer", func() error {
				_, err := c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ct})
				return err
			}))
			must(b, "StopPodSandbox", lat.time("StopPodSandbox", func() error {
				_, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p})
				return err
			}))
			must(b, "RemovePodSandbox", lat.time("RemovePodSandbox", func() error {
				_, err := c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p})
				return err
			}))
		}
		lat.report(b, fmt.Sprintf("at %d running pods", n), append(queries,
			"StopContainer", "RemoveContainer", "StopPodSandbox", "RemovePodSandbox"))
	}
}

func mustMarshal(b *testing.B, m proto.Message) []byte {
	data, err := proto.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// removePodsParallel stops and removes pods, four at a time (cleanup).
func removePodsParallel(t testing.TB, c *criClient, pods []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	ch := make(chan string)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range ch {
				if _, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p}); err != nil {
					t.Errorf("cleanup: StopPodSandbox %s: %v", p, err)
				}
				if _, err := c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p}); err != nil {
					t.Errorf("cleanup: RemovePodSandbox %s: %v", p, err)
				}
			}
		}()
	}
	for _, p := range pods {
		ch <- p
	}
	close(ch)
	wg.Wait()
}

// logMark appends a line to the service's log (to find a phase in it).
func (s *criService) logMark(line string) {
	if f, err := os.OpenFile(s.LogPath, os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
		fmt.Fprintln(f, line)
		f.Close()
	}
}
