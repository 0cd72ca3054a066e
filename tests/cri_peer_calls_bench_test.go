package tests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// otherCalls are the CRI calls BenchmarkCRIVsContainerd times at 10 running
// pods besides the List/Status ones: what the kubelet calls per container
// (ImageStatus before a create, the single stats, a resize, a log
// rotation, a stream's URL), at its start (Version, RuntimeConfig,
// UpdateRuntimeConfig) and every few seconds (ImageFsInfo, ListImages).
// CheckpointContainer (CRIU) and GetContainerEvents (a stream) are not
// timed.
var otherCalls = []string{
	"Version", "RuntimeConfig", "UpdateRuntimeConfig", "ImageStatus", "ListImages", "ImageFsInfo",
	"PullImage (present)", "ContainerStats", "PodSandboxStats", "UpdateContainerResources",
	"ReopenContainerLog", "Exec", "Attach", "PortForward", "ListMetricDescriptors", "ListPodSandboxMetrics",
}

// pullCalls are the image rows: a pull of an image whose base layer the
// node has and whose top layer it has not, and its removal; then a pull of
// a large image (three new layers of 1500 files, 72 MB in all, about half
// that compressed: an application image's size) and its removal.
var pullCalls = []string{"PullImage (new layer)", "RemoveImage", "PullImage (72 MB)", "RemoveImage (72 MB)"}

// measureOtherCalls times otherCalls on each peer in turn, rounds times,
// against its running pods and containers, each turn after turnIdle. A call a peer does not
// implement (Unimplemented) has no time for it.
func measureOtherCalls(b *testing.B, peers []*peer, lat map[string]latencies, pods, ctrs map[string][]string, ref string, rounds int) {
	ctx := context.Background()
	unimplemented := map[string]bool{} // peer + call
	for i := 0; i < rounds; i++ {
		for _, p := range inTurn(peers, i) {
			pod, ctr := pods[p.name][i%len(pods[p.name])], ctrs[p.name][i%len(ctrs[p.name])]
			shares := int64(512 + 512*(i%2)) // each update changes the cgroup
			calls := map[string]func() error{
				"Version": func() error {
					_, err := p.c.Version(ctx, &runtimeapi.VersionRequest{})
					return err
				},
				"RuntimeConfig": func() error {
					_, err := p.c.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
					return err
				},
				"UpdateRuntimeConfig": func() error {
					_, err := p.c.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{
						RuntimeConfig: &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{}}})
					return err
				},
				"ImageStatus": func() error {
					_, err := p.c.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
					return err
				},
				"ListImages": func() error {
					_, err := p.c.ListImages(ctx, &runtimeapi.ListImagesRequest{})
					return err
				},
				"ImageFsInfo": func() error {
					_, err := p.c.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
					return err
				},
				"PullImage (present)": func() error {
					_, err := p.c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
					return err
				},
				"ContainerStats": func() error {
					_, err := p.c.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: ctr})
					return err
				},
				"PodSandboxStats": func() error {
					_, err := p.c.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: pod})
					return err
				},
				"UpdateContainerResources": func() error {
					_, err := p.c.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: ctr,
						Linux: &runtimeapi.LinuxContainerResources{CpuShares: shares, MemoryLimitInBytes: 256 << 20}})
					return err
				},
				"ReopenContainerLog": func() error {
					_, err := p.c.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: ctr})
					return err
				},
				"Exec": func() error {
					_, err := p.c.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: ctr, Cmd: []string{"true"}, Stdout: true})
					return err
				},
				"Attach": func() error {
					_, err := p.c.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: ctr, Stdout: true})
					return err
				},
				"PortForward": func() error {
					_, err := p.c.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: pod, Port: []int32{80}})
					return err
				},
				"ListMetricDescriptors": func() error {
					_, err := p.c.ListMetricDescriptors(ctx, &runtimeapi.ListMetricDescriptorsRequest{})
					return err
				},
				"ListPodSandboxMetrics": func() error {
					_, err := p.c.ListPodSandboxMetrics(ctx, &runtimeapi.ListPodSandboxMetricsRequest{})
					return err
				},
			}
			p.idleTurn(func() {
				for _, name := range otherCalls {
					if unimplemented[p.name+name] {
						continue
					}
					l := latencies{}
					err := l.time(name, calls[name])
					if status.Code(err) == codes.Unimplemented && p.ref {
						unimplemented[p.name+name] = true
						continue
					}
					must(b, p.name+" "+name, err)
					lat[p.name][name] = append(lat[p.name][name], l[name]...)
				}
			})
		}
	}
}

// measurePulls times, rounds times on each peer in turn, the pull of an
// image whose 1 MiB top layer is new and its removal; then, in 3 rounds,
// the pull of a large image of new layers (largeImage) and its removal.
func measurePulls(b *testing.B, peers []*peer, lat map[string]latencies, reg *testutil.Registry, rounds int) {
	base := peerBusyboxLayer(b)
	for i := 0; i < rounds; i++ {
		ref := reg.Push(b, fmt.Sprintf("rkt-test/pulled:%d", i), testutil.Image(b, testutil.ImageConfig{Cmd: []string{"sh"}},
			base, testutil.Layer(b, testutil.Entry{Name: "data/blob", Body: benchBlob(i, 1<<20)})))
		timePullRemove(b, peers, lat, ref, i, pullCalls[0], pullCalls[1])
	}
	for i := 0; i < 3; i++ {
		ref := reg.Push(b, fmt.Sprintf("rkt-test/large:%d", i), largeImage(b, base, i))
		timePullRemove(b, peers, lat, ref, i, pullCalls[2], pullCalls[3])
	}
}

// largeImage is the busybox base and three layers of 1500 files of 16 KiB
// of hex text (new content each round, about 2:1 under gzip).
func largeImage(b *testing.B, base v1.Layer, round int) v1.Image {
	layers := []v1.Layer{base}
	for l := 0; l < 3; l++ {
		var es []testutil.Entry
		for f := 0; f < 1500; f++ {
			body := hex.EncodeToString(benchBlob((round*3+l)*1500+f+1000, 8<<10))
			es = append(es, testutil.Entry{Name: fmt.Sprintf("data%d/f%d", l, f), Body: []byte(body)})
		}
		layers = append(layers, testutil.Layer(b, es...))
	}
	return testutil.Image(b, testutil.ImageConfig{Cmd: []string{"sh"}}, layers...)
}

// timePullRemove times, on each peer in turn (round i's order), the pull
// of ref and the removal of the image, and checks it is gone.
func timePullRemove(b *testing.B, peers []*peer, lat map[string]latencies, ref string, i int, pullRow, removeRow string) {
	ctx := context.Background()
	for _, p := range inTurn(peers, i) {
		var id string
		must(b, p.name+" "+pullRow, lat[p.name].time(pullRow, func() error {
			r, err := p.c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
			if err == nil {
				id = r.ImageRef
			}
			return err
		}))
		must(b, p.name+" "+removeRow, lat[p.name].time(removeRow, func() error {
			_, err := p.c.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: id}})
			return err
		}))
		st, err := p.c.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		must(b, p.name+" ImageStatus", err)
		if st.Image != nil {
			must(b, p.name+" RemoveImage", errors.New("the removed image is still listed"))
		}
	}
}

// benchBlob is n bytes gzip cannot compress (a SHA-256 chain seeded by
// round).
func benchBlob(round, n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	sum := sha256.Sum256([]byte(fmt.Sprint("rkt-bench-", round)))
	for len(out) < n {
		out = append(out, sum[:]...)
		sum = sha256.Sum256(sum[:])
	}
	return out[:n]
}
