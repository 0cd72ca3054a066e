package tests

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestKubeletDefaultsOnThisHost: what a kubelet sends with every pod must
// run on any host: hugepage limits where the hugetlb controller is missing
// (ignored, as containerd does by default) and SELinux options where
// SELinux is off (ignored, as containerd and CRI-O do).
func TestKubeletDefaultsOnThisHost(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	logDir := podLogDir(t, c)
	ref, _ := pullTestImage(t, c)
	ctx := rpcCtx(t)

	se := &runtimeapi.SELinuxOption{Level: "s0"}
	pc := podConfig("kubelet-defaults", logDir)
	pc.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{SelinuxOptions: se}
	pc.Linux.Resources = &runtimeapi.LinuxContainerResources{
		HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 0}},
	}
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	cc := containerConfig("app", ref, "sleep", "100000")
	cc.Linux = &runtimeapi.LinuxContainerConfig{
		Resources: &runtimeapi.LinuxContainerResources{
			MemoryLimitInBytes: 64 << 20,
			HugepageLimits:     []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 0}, {PageSize: "1GB", Limit: 0}},
		},
		SecurityContext: &runtimeapi.LinuxContainerSecurityContext{SelinuxOptions: se},
	}
	cr, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, Config: cc, SandboxConfig: pc})
	must(t, "CreateContainer with hugepage limits and SELinux level s0", err)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cr.ContainerId})
	must(t, "StartContainer", err)
	_, err = c.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: cr.ContainerId,
		Linux: &runtimeapi.LinuxContainerResources{
			MemoryLimitInBytes: 96 << 20,
			HugepageLimits:     []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 0}},
		},
	})
	must(t, "UpdateContainerResources with hugepage limits", err)
	st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: cr.ContainerId})
	must(t, "ContainerStatus", err)
	if st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("container %v, want running", st.Status.State)
	}
}
