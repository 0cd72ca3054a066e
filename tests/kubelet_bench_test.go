package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// staticPodToRunning writes n static pod manifests one after the other and
// returns, for each, the time from writing it until the runtime reports its
// container running (polled through the CRI).
func staticPodToRunning(b *testing.B, k *kubelet, c *criClient, image string, n int) []time.Duration {
	var ds []time.Duration
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("bench%d", i)
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
		k.waitFor(name+" running", time.Minute, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
				State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
				LabelSelector: map[string]string{"io.kubernetes.pod.name": name + "-" + k.NodeName}}})
			if err != nil {
				return err
			}
			if len(l.Containers) == 0 {
				return fmt.Errorf("no running container of %s", name)
			}
			return nil
		})
		ds = append(ds, time.Since(start))
		if err := os.Remove(path); err != nil {
			b.Fatal(err)
		}
	}
	return ds
}

// BenchmarkKubeletStaticPod times a standalone kubelet's static pods from
// manifest to running container (median of 10, image already pulled),
// against rkt kubelet-service and then Debian's containerd on the same
// host, and reports the ratio.
func BenchmarkKubeletStaticPod(b *testing.B) {
	requireRoot(b)
	const n = 10
	env := testutil.NewEnv(b)
	reg := testutil.StartRegistry(b)
	image := reg.Push(b, "bench/busybox:1", testutil.Busybox(b))
	pause := reg.Push(b, "bench/pause:1", testutil.BusyboxWith(b, testutil.ImageConfig{Entrypoint: []string{"sleep", "2147483647"}}))
	medians := map[string]time.Duration{}
	for _, rt := range []string{"rkt", "containerd"} {
		ok := b.Run(rt, func(b *testing.B) {
			var endpoint string
			if rt == "rkt" {
				endpoint = startCRIService(b, env).Endpoint
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
			k := startKubelet(b, endpoint, root)
			staticPodToRunning(b, k, c, image, 1) // warm-up
			ds := staticPodToRunning(b, k, c, image, n)
			medians[rt] = percentile(ds, 50)
			b.ReportMetric(ms(medians[rt]), "median-ms")
			fmt.Printf("BenchmarkKubeletStaticPod: %s manifest->running median %.0f ms (p90 %.0f ms, n=%d)\n",
				rt, ms(medians[rt]), ms(percentile(ds, 90)), n)
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
