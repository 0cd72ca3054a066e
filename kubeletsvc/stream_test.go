package kubeletsvc

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestStreamPodSandboxMetrics: the stream carries the items of
// ListPodSandboxMetrics, each once, in batches of at most streamBatch.
func TestStreamPodSandboxMetrics(t *testing.T) {
	e := newTestEnv(t)
	for i := 0; i < streamBatch+1; i++ {
		pod := e.runPod(t, fmt.Sprintf("p%d", i))
		e.startContainer(t, pod, "c")
	}
	list, err := e.rs.ListPodSandboxMetrics(e.ctx, &runtimeapi.ListPodSandboxMetricsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, pm := range list.GetPodMetrics() {
		want = append(want, pm.GetPodSandboxId())
	}
	if len(want) != streamBatch+1 {
		t.Fatalf("ListPodSandboxMetrics: %d pods, want %d", len(want), streamBatch+1)
	}
	st, err := e.rs.StreamPodSandboxMetrics(e.ctx, &runtimeapi.StreamPodSandboxMetricsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var sizes []int
	for {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(r.GetPodSandboxMetrics()))
		for _, pm := range r.GetPodSandboxMetrics() {
			if len(pm.GetContainerMetrics()) != 1 {
				t.Fatalf("pod %s: %d container metrics, want 1", pm.GetPodSandboxId(), len(pm.GetContainerMetrics()))
			}
			got = append(got, pm.GetPodSandboxId())
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("streamed %d pods, listed %d (or they differ)", len(got), len(want))
	}
	if !slices.Equal(sizes, []int{streamBatch, 1}) {
		t.Fatalf("message sizes %v, want [%d 1]", sizes, streamBatch)
	}
}
