package tests

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIOOMKilled: a container that outgrows its memory limit is reported
// EXITED with reason OOMKilled, as the kubelet expects.
func TestCRIOOMKilled(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	t.Cleanup(func() { removeAllPods(t, c) })
	ctx := rpcCtx(t)
	pc := podConfig("oom", "")
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	cfg := containerConfig("hog", imgID, "sh", "-c", "x=0123456789abcdef; while true; do x=$x$x; done")
	cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 32 << 20, MemorySwapLimitInBytes: 32 << 20}
	cc, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, Config: cfg, SandboxConfig: pc})
	must(t, "CreateContainer", err)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cc.ContainerId})
	must(t, "StartContainer", err)
	waitContainerState(t, c, cc.ContainerId, runtimeapi.ContainerState_CONTAINER_EXITED)
	st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: cc.ContainerId})
	must(t, "ContainerStatus", err)
	if st.Status.Reason != "OOMKilled" || st.Status.ExitCode != 137 || st.Status.FinishedAt == 0 {
		t.Fatalf("container over its memory limit: reason %q exit %d finished %d; want OOMKilled, 137",
			st.Status.Reason, st.Status.ExitCode, st.Status.FinishedAt)
	}
	if st.Status.Resources.GetLinux().GetMemoryLimitInBytes() != 32<<20 {
		t.Errorf("status resources %v, want the 32 MiB limit", st.Status.Resources)
	}
}
