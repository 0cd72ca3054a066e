package kubeletsvc

import (
	"fmt"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/cgstats"
	"github.com/rkt/rkt/stage0"
)

// benchEnv is a service with n sandboxes, each running one container.
func benchEnv(b *testing.B, n int) *testEnv {
	e := newTestEnv(b)
	for i := 0; i < n; i++ {
		pod := e.runPod(b, fmt.Sprintf("p%d", i))
		e.startContainer(b, pod, "c")
		now := time.Now()
		e.rt.mu.Lock()
		e.rt.stats[pod] = &stage0.AppStats{Timestamp: now, Stats: cgstats.Stats{CPUUsageNanos: 1e9, MemoryWorkingSet: 1 << 20}}
		e.rt.stats[appKey(pod, "c-0")] = &stage0.AppStats{Timestamp: now, Stats: cgstats.Stats{CPUUsageNanos: 1e9, MemoryWorkingSet: 1 << 20}}
		e.rt.mu.Unlock()
	}
	e.rt.mu.Lock()
	e.rt.gen = 1            // nothing changes from now on: the snapshot is kept
	e.rt.sharedStats = true // and the stats, as stage0 returns them
	e.rt.mu.Unlock()
	return e
}

// The List* calls the kubelet makes all the time, at 500 pods, through
// gRPC (a bufconn): the handler, the encoding and the client's decoding.
func BenchmarkList500(b *testing.B) {
	e := benchEnv(b, 500)
	calls := map[string]func() error{
		"ListPodSandbox": func() error {
			_, err := e.rs.ListPodSandbox(e.ctx, &runtimeapi.ListPodSandboxRequest{})
			return err
		},
		"ListContainers": func() error {
			_, err := e.rs.ListContainers(e.ctx, &runtimeapi.ListContainersRequest{})
			return err
		},
		"ListContainerStats": func() error {
			_, err := e.rs.ListContainerStats(e.ctx, &runtimeapi.ListContainerStatsRequest{})
			return err
		},
		"ListPodSandboxStats": func() error {
			_, err := e.rs.ListPodSandboxStats(e.ctx, &runtimeapi.ListPodSandboxStatsRequest{})
			return err
		},
	}
	for _, name := range []string{"ListPodSandbox", "ListContainers", "ListContainerStats", "ListPodSandboxStats"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := calls[name](); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
