package tests

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// hostCgroup2 is where this host (cgroup v1, hybrid) mounts cgroup2.
const hostCgroup2 = "/sys/fs/cgroup/unified"

// TestCRICgroup2Unified runs the service where /sys/fs/cgroup is the
// cgroup2 hierarchy alone, as on a pure cgroup v2 host (a private mount
// namespace with cgroup2 mounted over the v1 tree; the host's v1
// hierarchies keep the other controllers, so only hugetlb can be limited):
// the pod and its container get cgroup2 cgroups with their hugepage
// limits, an update changes them, exec runs in the container's cgroup,
// stats come from it, and stopping and removing leave nothing in the hierarchy.
func TestCRICgroup2Unified(t *testing.T) {
	requireRoot(t)
	if b, err := os.ReadFile(filepath.Join(hostCgroup2, "cgroup.controllers")); err != nil || !strings.Contains(string(b), "hugetlb") {
		t.Skipf("no cgroup2 hierarchy with the hugetlb controller at %s", hostCgroup2)
	}
	if _, err := os.Stat(filepath.Join(hostCgroup2, "hugetlb.2MB.max")); err == nil {
		t.Skip("the host's cgroup2 root has hugetlb enabled below it already")
	}
	env := testutil.NewEnv(t)
	svc := startCRIServiceUnified(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	logDir := podLogDirOf(t, svc)
	ctx := rpcCtx(t)

	const mib = 1 << 20
	pc := podConfig("cgroup2", logDir)
	pc.Linux.Resources = &runtimeapi.LinuxContainerResources{
		HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 8 * mib}},
	}
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	pod := rp.PodSandboxId
	cc := containerConfig("sleeper", imgID, "sleep", "100000")
	cc.Linux.Resources = &runtimeapi.LinuxContainerResources{
		HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 4 * mib}},
	}
	cr, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: cc, SandboxConfig: pc})
	must(t, "CreateContainer", err)
	ctr := cr.ContainerId
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctr})
	must(t, "StartContainer", err)

	// the exec's cgroup is the container's, below the pod's
	ex, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ctr, Cmd: []string{"cat", "/proc/self/cgroup"}, Timeout: 30})
	must(t, "ExecSync", err)
	var ctrCg string
	for _, l := range strings.Split(string(ex.Stdout), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			ctrCg = p
		}
	}
	podCg := filepath.Dir(ctrCg)
	if ex.ExitCode != 0 || !strings.HasPrefix(ctrCg, svc.cgroupParent()+"/") || !strings.Contains(filepath.Base(podCg), pod[:8]) {
		t.Fatalf("exec in the container: exit %d, cgroup2 path %q (from %q); want one below %s and the pod %s",
			ex.ExitCode, ctrCg, ex.Stdout, svc.cgroupParent(), pod)
	}
	procs := readCgroupFile(t, ctrCg, "cgroup.procs")
	if len(strings.Fields(procs)) != 1 {
		t.Errorf("container cgroup %s holds %q, want the container's one process", ctrCg, procs)
	}
	if got := readCgroupFile(t, ctrCg, "hugetlb.2MB.max"); got != strconv.Itoa(4*mib) {
		t.Errorf("container hugetlb.2MB.max = %q, want %d", got, 4*mib)
	}
	if got := readCgroupFile(t, podCg, "hugetlb.2MB.max"); got != strconv.Itoa(8*mib) {
		t.Errorf("pod hugetlb.2MB.max = %q, want %d", got, 8*mib)
	}

	// an update reaches the container's cgroup2 files
	_, err = c.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: ctr,
		Linux: &runtimeapi.LinuxContainerResources{HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 6 * mib}}}})
	must(t, "UpdateContainerResources", err)
	if got := readCgroupFile(t, ctrCg, "hugetlb.2MB.max"); got != strconv.Itoa(6*mib) {
		t.Errorf("container hugetlb.2MB.max after the update = %q, want %d", got, 6*mib)
	}

	// stats come from the container's cgroup2 files
	st, err := c.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: ctr})
	must(t, "ContainerStats", err)
	if st.GetStats().GetCpu().GetUsageCoreNanoSeconds().GetValue() == 0 {
		t.Errorf("container stats without CPU usage: %v", st.GetStats())
	}

	// the container is stopped through its cgroup and its cgroup removed
	_, err = c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: ctr, Timeout: 1})
	must(t, "StopContainer", err)
	waitContainerState(t, c, ctr, runtimeapi.ContainerState_CONTAINER_EXITED)
	_, err = c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ctr})
	must(t, "RemoveContainer", err)
	waitNoCgroup(t, ctrCg)

	_, err = c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: pod})
	must(t, "StopPodSandbox", err)
	_, err = c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: pod})
	must(t, "RemovePodSandbox", err)
	waitNoCgroup(t, podCg)
}

// readCgroupFile reads a file of a cgroup2 cgroup from the host's view.
func readCgroupFile(t *testing.T, cg, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(hostCgroup2, cg, name))
	if err != nil {
		t.Errorf("cannot read %s of cgroup %s: %v", name, cg, err)
	}
	return strings.TrimSpace(string(b))
}

// waitNoCgroup waits for a cgroup2 cgroup to be removed.
func waitNoCgroup(t *testing.T, cg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if _, err := os.Stat(filepath.Join(hostCgroup2, cg)); os.IsNotExist(err) {
			return
		}
		select {
		case <-ctx.Done():
			t.Errorf("cgroup %s still exists", cg)
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}
