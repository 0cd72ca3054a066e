package kubeletsvc

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestStopContainer(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	graceful, killed := e.startContainer(t, pod, "graceful"), e.startContainer(t, pod, "killed")
	if _, err := e.rs.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: graceful, Timeout: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rs.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: killed}); err != nil {
		t.Fatal(err)
	}
	calls := e.rt.called()
	for _, want := range []string{
		"StopApp " + pod + "/graceful-0 force=false timeout=" + (5 * time.Second).String(),
		"StopApp " + pod + "/killed-0 force=true timeout=0s", // timeout 0: SIGKILL at once
	} {
		if !slices.Contains(calls, want) {
			t.Errorf("stage0 calls %v lack %q", calls, want)
		}
	}
	for id, code := range map[string]int32{graceful: 143, killed: 137} {
		st, err := e.rs.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err != nil {
			t.Fatal(err)
		}
		if s := st.GetStatus(); s.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || s.GetExitCode() != code || s.GetReason() != "Error" || s.GetFinishedAt() == 0 {
			t.Errorf("status of %s: %v", id, s)
		}
	}
	// idempotent: stopped, and gone
	n := len(e.rt.called())
	if _, err := e.rs.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: graceful}); err != nil {
		t.Errorf("stopping a stopped container: %v", err)
	}
	if calls := e.rt.called()[n:]; len(calls) != 0 {
		t.Errorf("stopping a stopped container called stage0: %v", calls)
	}
	if _, err := e.rs.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}); err != nil {
		t.Errorf("stopping an unknown container: %v", err)
	}
}

// A grace period too long for a time.Duration is the longest one, not an
// immediate SIGKILL (int64 seconds overflow when turned into nanoseconds).
func TestStopContainerHugeTimeout(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	for i, timeout := range []int64{1 << 62, 9223372037, math.MaxInt64} {
		name := fmt.Sprintf("c%d", i)
		id := e.startContainer(t, pod, name)
		if _, err := e.rs.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout}); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("StopApp %s/%s-0 force=false timeout=%v", pod, name, time.Duration(math.MaxInt64))
		if calls := e.rt.called(); !slices.Contains(calls, want) {
			t.Errorf("timeout %d: stage0 calls %v lack %q", timeout, calls, want)
		}
	}
}
