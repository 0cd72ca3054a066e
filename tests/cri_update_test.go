package tests

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIUpdateResources: UpdateContainerResources changes the limits in
// force, ContainerStatus reports them, also after a restart of the service.
func TestCRIUpdateResources(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	t.Cleanup(func() { removeAllPods(t, dialCRI(t, svc)) })
	ctx := rpcCtx(t)
	pc := podConfig("resize", "")
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	cfg := containerConfig("app", imgID, "sleep", "100000")
	cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 64 << 20, CpuShares: 256}
	cc, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, Config: cfg, SandboxConfig: pc})
	must(t, "CreateContainer", err)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cc.ContainerId})
	must(t, "StartContainer", err)
	status := func(c *criClient) *runtimeapi.LinuxContainerResources {
		st, err := c.ContainerStatus(rpcCtx(t), &runtimeapi.ContainerStatusRequest{ContainerId: cc.ContainerId})
		must(t, "ContainerStatus", err)
		return st.Status.Resources.GetLinux()
	}
	// asked before the update: the answer the service keeps must not
	// outlive it
	if r := status(c); r.GetMemoryLimitInBytes() != 64<<20 || r.GetCpuShares() != 256 {
		t.Errorf("before the update: resources %v, want 64 MiB, 256 shares", r)
	}
	_, err = c.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: cc.ContainerId,
		Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 128 << 20, CpuShares: 512, CpuPeriod: 100000, CpuQuota: 50000}})
	must(t, "UpdateContainerResources", err)

	check := func(when string, c *criClient) {
		r := status(c)
		if r.GetMemoryLimitInBytes() != 128<<20 || r.GetCpuShares() != 512 || r.GetCpuQuota() != 50000 || r.GetCpuPeriod() != 100000 {
			t.Errorf("%s: resources %v, want 128 MiB, 512 shares, 50000/100000 quota", when, r)
		}
	}
	check("after the update", c)
	svc.Kill()
	svc.Restart()
	check("after a restart of the service", dialCRI(t, svc))
}
