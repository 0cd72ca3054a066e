package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// staticPodSample is one static pod: when its manifest was written and when
// the runtime was first seen reporting its container running.
type staticPodSample struct{ Written, Running time.Time }

// staticPodPoll is how often the benchmark asks the runtime whether the
// container runs: fine enough not to round the times it measures (at 200 ms
// the medians of both runtimes fell on multiples of it).
const staticPodPoll = 10 * time.Millisecond

// staticPodToRunning writes n static pod manifests (pods prefix0...) one
// after the other and returns, for each, when it was written and when the
// runtime first reported its container running (polled through the CRI).
func staticPodToRunning(b *testing.B, k *kubelet, c *criClient, image, prefix string, n int) []staticPodSample {
	var ss []staticPodSample
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s%d", prefix, i)
		manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: %s, command: [sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']}
`, name, image)
		path := filepath.Join(k.Manifests, name+".yaml")
		start := time.Now()
		if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
			b.Fatal(err)
		}
		running := func() (bool, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
				State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
				LabelSelector: map[string]string{"io.kubernetes.pod.name": name + "-" + k.NodeName}}})
			return err == nil && len(l.Containers) > 0, err
		}
		for deadline := start.Add(time.Minute); ; time.Sleep(staticPodPoll) {
			ok, err := running()
			if ok {
				break
			}
			select {
			case <-k.done:
				b.Fatalf("the kubelet exited while %s was starting (%v)", name, err)
			default:
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s: no running container within a minute (%v)", name, err)
			}
		}
		ss = append(ss, staticPodSample{start, time.Now()})
		if err := os.Remove(path); err != nil {
			b.Fatal(err)
		}
	}
	return ss
}

// BenchmarkKubeletStaticPod times a standalone kubelet's static pods from
// manifest to running container (median of 10, image already pulled, the
// runtime polled every 10 ms),
// against rkt kubelet-service and then Debian's containerd on the same
// host, and reports the ratio. With RKT_BENCH_KUBELET_TRACE=1 the kubelet
// talks to the runtime through a timing proxy and the benchmark prints when
// each of the pod's CRI calls started and ended after the manifest write
// (=2: and the kubelet's RunPodSandbox and CreateContainer requests).
func BenchmarkKubeletStaticPod(b *testing.B) {
	requireRoot(b)
	const n = 10
	trace := os.Getenv("RKT_BENCH_KUBELET_TRACE")
	env := testutil.NewEnv(b)
	reg := testutil.StartRegistry(b)
	image := reg.Push(b, "bench/busybox:1", testutil.Busybox(b))
	pause := reg.Push(b, "bench/pause:1", testutil.BusyboxWith(b, testutil.ImageConfig{Entrypoint: []string{"sleep", "2147483647"}}))
	medians := map[string]time.Duration{}
	for _, rt := range []string{"rkt", "containerd"} {
		ok := b.Run(rt, func(b *testing.B) {
			var endpoint string
			if rt == "rkt" {
				// at containerd's log level; RKT_BENCH_SVC_LOG=file keeps
				// the service's log there, at debug level
				level, keep := "warn", os.Getenv("RKT_BENCH_SVC_LOG")
				if keep != "" {
					level = "debug"
				}
				svc := startCRIService(b, env, "--log-level="+level)
				if keep != "" {
					b.Cleanup(func() { os.WriteFile(keep, []byte(svc.Log()), 0o644) })
				}
				endpoint = svc.Endpoint
			} else {
				if containerdVersion() == "" {
					b.Skip("containerd is not installed (.ci/install-bench-deps installs it)")
				}
				endpoint = "unix://" + startContainerd(b, reg.Addr, pause).Socket
			}
			c := dialCRIEndpoint(b, endpoint)
			b.Cleanup(func() { removeAllPods(b, c) })
			ctx := rpcCtx(b)
			for _, img := range []string{image, pause} {
				if _, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: img}}); err != nil {
					b.Fatalf("PullImage %s: %v", img, err)
				}
			}
			root, err := os.MkdirTemp("", "rkt-bench-kubelet-")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { os.RemoveAll(root) })
			kubeletEndpoint := endpoint
			var proxy *criTraceProxy
			if trace != "" {
				proxy = startCRITraceProxy(b, endpoint, root)
				kubeletEndpoint = proxy.Endpoint
			}
			k := startKubelet(b, kubeletEndpoint, root)
			staticPodToRunning(b, k, c, image, "warm", 1)
			ss := staticPodToRunning(b, k, c, image, "bench", n)
			var ds []time.Duration
			for _, s := range ss {
				ds = append(ds, s.Running.Sub(s.Written))
			}
			medians[rt] = percentile(ds, 50)
			b.ReportMetric(ms(medians[rt]), "median-ms")
			fmt.Printf("BenchmarkKubeletStaticPod: %s manifest->running median %.0f ms (p90 %.0f ms, n=%d)\n",
				rt, ms(medians[rt]), ms(percentile(ds, 90)), n)
			if proxy != nil {
				printStaticPodTrace(rt, proxy, ss, trace == "2")
			}
		})
		if !ok {
			return
		}
	}
	if medians["rkt"] > 0 && medians["containerd"] > 0 {
		ratio := float64(medians["rkt"]) / float64(medians["containerd"])
		b.ReportMetric(ratio, "rkt/containerd")
		fmt.Printf("BenchmarkKubeletStaticPod: rkt/containerd = %.2fx\n", ratio)
	}
}

// staticPodCalls are the CRI calls the kubelet makes to start a static pod,
// in its order.
var staticPodCalls = []string{"RunPodSandbox", "PodSandboxStatus", "ImageStatus", "PullImage", "CreateContainer", "StartContainer"}

// printStaticPodTrace prints, for each call of staticPodCalls, the median
// of when its first occurrence after the manifest write (after
// RunPodSandbox for the later ones) started and ended, and the calls of the
// median sample in order (with the requests that create the pod if
// requests).
func printStaticPodTrace(rt string, p *criTraceProxy, ss []staticPodSample, requests bool) {
	starts, ends, durs := map[string][]time.Duration{}, map[string][]time.Duration{}, map[string][]time.Duration{}
	var total, seenAfter []time.Duration
	for _, s := range ss {
		var after time.Time // the end of RunPodSandbox
		seen := map[string]bool{}
		for _, c := range p.Calls(s.Written, s.Running) {
			m := c.Method
			if !slices.Contains(staticPodCalls, m) || seen[m] || m != "RunPodSandbox" && (after.IsZero() || c.Start.Before(after)) {
				continue
			}
			seen[m] = true
			starts[m] = append(starts[m], c.Start.Sub(s.Written))
			ends[m] = append(ends[m], c.End.Sub(s.Written))
			durs[m] = append(durs[m], c.End.Sub(c.Start))
			switch m {
			case "RunPodSandbox":
				after = c.End
			case "StartContainer":
				seenAfter = append(seenAfter, s.Running.Sub(c.End))
			}
		}
		total = append(total, s.Running.Sub(s.Written))
	}
	fmt.Printf("BenchmarkKubeletStaticPod: %s: the pod's CRI calls, ms after the manifest write (medians of %d):\n", rt, len(ss))
	fmt.Printf("  %-18s %8s %8s %8s %3s\n", "call", "start", "end", "took", "n")
	for _, m := range staticPodCalls {
		if len(starts[m]) > 0 {
			fmt.Printf("  %-18s %8.1f %8.1f %8.1f %3d\n", m, ms(percentile(starts[m], 50)), ms(percentile(ends[m], 50)),
				ms(percentile(durs[m], 50)), len(starts[m]))
		}
	}
	fmt.Printf("  %-18s %8s %8.1f %8.1f (after StartContainer)\n", "running seen", "", ms(percentile(total, 50)), ms(percentile(seenAfter, 50)))
	med := percentile(total, 50)
	for _, s := range ss {
		if s.Running.Sub(s.Written) != med {
			continue
		}
		fmt.Printf("  every call of the median sample (%.0f ms):\n", ms(med))
		for _, c := range p.Calls(s.Written, s.Running) {
			fmt.Printf("    %8.1f %8.1f %s\n", ms(c.Start.Sub(s.Written)), ms(c.End.Sub(s.Written)), c.Method)
			var req proto.Message
			switch c.Method {
			case "RunPodSandbox":
				req = &runtimeapi.RunPodSandboxRequest{}
			case "CreateContainer":
				req = &runtimeapi.CreateContainerRequest{}
			}
			if requests && req != nil && proto.Unmarshal(c.Req, req) == nil {
				fmt.Printf("%s\n", prototext.Format(req))
			}
		}
		break
	}
}
