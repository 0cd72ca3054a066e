package tests

import (
	"fmt"
	"os"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRISandboxNetworkStatsWithoutRunningContainer: a running sandbox has
// the counters of its network interface (eth0) in PodSandboxStats and
// ListPodSandboxStats when none of its containers runs: before its first
// container starts, once its one container has exited (a finished Job's
// pod, a CrashLoopBackOff pod between restarts), and from a service
// restarted in another mount namespace (where the pod's netns file is an
// empty one); containerd and CRI-O read them from the sandbox's network
// namespace too. No thread of the service is left in the pod's namespace.
func TestCRISandboxNetworkStatsWithoutRunningContainer(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIServicePrivateMounts(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	logDir := podLogDirOf(t, svc)
	ctx := rpcCtx(t)
	pc := podConfig("netstats", logDir)
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	pod := rp.PodSandboxId
	wantSandboxEth0(t, c, pod, "before its first container")

	cr, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod,
		Config: containerConfig("once", imgID, "true"), SandboxConfig: pc})
	must(t, "CreateContainer", err)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cr.ContainerId})
	must(t, "StartContainer", err)
	waitContainerState(t, c, cr.ContainerId, runtimeapi.ContainerState_CONTAINER_EXITED)
	wantSandboxEth0(t, c, pod, "after its one container exited")
	noThreadOutsideOwnNetNS(t, svc)

	svc.Kill()
	svc.Restart()
	c = dialCRI(t, svc)
	wantSandboxEth0(t, c, pod, "after its one container exited, from a service restarted in another mount namespace")
	noThreadOutsideOwnNetNS(t, svc)
}

// wantSandboxEth0 checks that PodSandboxStats and ListPodSandboxStats give
// the sandbox's eth0 counters as its default interface.
func wantSandboxEth0(t *testing.T, c *criClient, pod, when string) {
	t.Helper()
	ctx := rpcCtx(t)
	st, err := c.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: pod})
	must(t, "PodSandboxStats", err)
	l, err := c.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: &runtimeapi.PodSandboxStatsFilter{Id: pod}})
	must(t, "ListPodSandboxStats", err)
	if len(l.GetStats()) != 1 {
		t.Fatalf("ListPodSandboxStats of sandbox %s %s: %d items, want 1", pod, when, len(l.GetStats()))
	}
	for rpc, s := range map[string]*runtimeapi.PodSandboxStats{"PodSandboxStats": st.GetStats(), "ListPodSandboxStats": l.GetStats()[0]} {
		n := s.GetLinux().GetNetwork()
		d := n.GetDefaultInterface()
		if d.GetName() != "eth0" || d.GetRxBytes() == nil || d.GetTxBytes() == nil || d.GetRxErrors() == nil || d.GetTxErrors() == nil {
			t.Errorf("%s of sandbox %s %s: network %v; want the counters of eth0", rpc, pod, when, n)
		}
	}
}

// noThreadOutsideOwnNetNS checks that every thread of the service is in
// the service's network namespace: none was left in a pod's.
func noThreadOutsideOwnNetNS(t *testing.T, svc *criService) {
	t.Helper()
	pid := svc.cmd.Process.Pid
	own, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	must(t, "read the service's network namespace", err)
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	must(t, "list the service's threads", err)
	for _, task := range tasks {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/task/%s/ns/net", pid, task.Name()))
		if err == nil && ns != own {
			t.Errorf("thread %s of the service is in network namespace %s, not the service's %s", task.Name(), ns, own)
		}
	}
}
