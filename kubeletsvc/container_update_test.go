package kubeletsvc

import (
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestUpdateContainerResources(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	running, created := e.startContainer(t, pod, "run"), e.createContainer(t, pod, "new")
	res := &runtimeapi.LinuxContainerResources{CpuShares: 256, CpuQuota: 50000, CpuPeriod: 100000, MemoryLimitInBytes: 128 << 20}
	if _, err := e.rs.UpdateContainerResources(e.ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: running, Linux: res}); err != nil {
		t.Fatal(err)
	}
	got := e.rt.updated[appKey(pod, "run-0")]
	if got == nil || got.CPU == nil || *got.CPU.Shares != 256 || *got.CPU.Quota != 50000 || *got.CPU.Period != 100000 || *got.Memory.Limit != 128<<20 {
		t.Errorf("resources given to stage0: %+v", got)
	}
	_, err := e.rs.UpdateContainerResources(e.ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: created, Linux: res})
	wantCode(t, "updating a created container", err, codes.FailedPrecondition)
	_, err = e.rs.UpdateContainerResources(e.ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: running,
		Linux: &runtimeapi.LinuxContainerResources{CpuShares: -1}})
	wantCode(t, "negative shares", err, codes.InvalidArgument)
}

func TestReopenContainerLog(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	running, created := e.startContainer(t, pod, "run"), e.createContainer(t, pod, "new")
	if _, err := e.rs.ReopenContainerLog(e.ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: running}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(e.rt.called(), "ReopenAppLog "+pod+"/run-0") {
		t.Errorf("stage0 calls %v lack the reopen", e.rt.called())
	}
	_, err := e.rs.ReopenContainerLog(e.ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: created})
	wantCode(t, "reopening the log of a created container", err, codes.FailedPrecondition)
}
