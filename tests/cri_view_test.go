package tests

import (
	"context"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// viewBound is how long the kubelet-service's in-memory view of the pods
// may take to see a change another process made (it is event-driven:
// inotify and pidfds; milliseconds when the machine is not overloaded).
const viewBound = 2 * time.Second

// TestCRIViewSeesOtherProcesses: List*/Status answer from memory, yet see
// within viewBound what happens behind the service's back: an app that
// exits on its own (stage1 records it), a stage1 that is SIGKILLed, the
// rkt CLI stopping and removing a CRI pod.
func TestCRIViewSeesOtherProcesses(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	t.Cleanup(func() { removeAllPods(t, c) })
	ctx := context.Background()

	// an app that exits on its own
	pc := podConfig("view-exit", "")
	rp, err := c.RunPodSandbox(rpcCtx(t), &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	cc, err := c.CreateContainer(rpcCtx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId,
		Config: containerConfig("quitter", imgID, "sh", "-c", "sleep 1; exit 3"), SandboxConfig: pc})
	must(t, "CreateContainer", err)
	_, err = c.StartContainer(rpcCtx(t), &runtimeapi.StartContainerRequest{ContainerId: cc.ContainerId})
	must(t, "StartContainer", err)
	waitUntil(t, 1*time.Second+viewBound, "the container's own exit", func() bool {
		st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: cc.ContainerId})
		return err == nil && st.Status.State == runtimeapi.ContainerState_CONTAINER_EXITED && st.Status.ExitCode == 3
	})
	l, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{Id: cc.ContainerId}})
	if err != nil || len(l.Containers) != 1 || l.Containers[0].State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("ListContainers after the exit: %v %v", l, err)
	}

	// a supervisor killed with SIGKILL (it writes nothing)
	killed, ctrKilled := runPodWithContainer(t, c, "view-kill", imgID, "")
	if err := syscall.Kill(sandboxPid(t, c, killed), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, viewBound, "the supervisor's death", func() bool {
		st, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: killed})
		if err != nil || st.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			return false
		}
		cs, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctrKilled})
		return err == nil && cs.Status.State == runtimeapi.ContainerState_CONTAINER_EXITED
	})

	// the rkt CLI stops, then removes a CRI pod
	pod, ctr := runPodWithContainer(t, c, "view-cli", imgID, "")
	env.RunOK("stop", pod)
	waitUntil(t, viewBound, "rkt stop", func() bool {
		l, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{Id: pod}})
		if err != nil || len(l.Items) != 1 || l.Items[0].State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			return false
		}
		cs, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctr})
		return err == nil && cs.Status.State == runtimeapi.ContainerState_CONTAINER_EXITED
	})
	env.RunOK("rm", pod)
	waitUntil(t, viewBound, "rkt rm", func() bool {
		l, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			return false
		}
		for _, s := range l.Items {
			if s.Id == pod {
				return false
			}
		}
		_, err = c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: pod})
		return statusCode(err) == "NotFound"
	})
}
