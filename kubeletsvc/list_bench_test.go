package kubeletsvc

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/cgstats"
	"github.com/rkt/rkt/stage0"
)

// benchEnv is a service with n sandboxes, each running one container.
func benchEnv(b testing.TB, n int) *testEnv {
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

// BenchmarkDecodeList500 is the lower bound of a List call at 500 pods for
// a Go client: decoding the kept answers (as the kubelet's gRPC client
// does, proto.Unmarshal), with no server and no transport. p50 and p99 are
// per decode, the client's GCs included.
func BenchmarkDecodeList500(b *testing.B) {
	e := benchEnv(b, 500)
	snap, err := e.svc.snapshot(e.ctx)
	if err != nil {
		b.Fatal(err)
	}
	ctrs := snap.containersResponse(e.svc)
	for _, tc := range []struct {
		name string
		msg  proto.Message
		new  func() proto.Message
	}{
		{"ListPodSandbox", snap.podSandboxResponse(), func() proto.Message { return &runtimeapi.ListPodSandboxResponse{} }},
		{"ListContainers", ctrs, func() proto.Message { return &runtimeapi.ListContainersResponse{} }},
	} {
		data, err := proto.Marshal(tc.msg)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			ds := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if err := proto.Unmarshal(data, tc.new()); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
			}
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
