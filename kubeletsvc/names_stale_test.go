package kubeletsvc

import (
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestNamesFreedByRemovalOutsideCRI: a sandbox or container removed
// outside the CRI (`rkt rm`, `rkt gc`, `rkt app rm`: the CLI twins) does
// not keep its CRI name reserved. The kubelet, finding no sandbox of a
// pod, runs one again with attempt 0 (and a container with the attempt of
// its log directory): refused with AlreadyExists until the service
// restarts, the pod could never run again.
func TestNamesFreedByRemovalOutsideCRI(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	ctr := e.createContainer(t, pod, "c")

	// the CLI removes the container, then the sandbox
	ct, err := e.svc.getContainer(e.ctx, ctr)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.rt.RemoveApp(e.ctx, pod, ct.app.App.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rs.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: pod, Config: containerConfig("c", "busybox"), SandboxConfig: sandboxConfig("p"),
	}); err != nil {
		t.Errorf("CreateContainer of a name whose container `rkt app rm` removed: %v", err)
	}
	if err := e.rt.Remove(e.ctx, pod, true); err != nil {
		t.Fatal(err)
	}
	// the kubelet's cleanup of what it knew does not help either
	if _, err := e.rs.RemovePodSandbox(e.ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: pod}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rs.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("web")}); err != nil {
		t.Errorf("RunPodSandbox of a name whose sandbox `rkt rm` removed: %v", err)
	}
}

// TestRepairForgetsSamplesOfRemovedPods: the CPU samples of a sandbox and
// its containers removed outside the CRI do not stay in memory for the
// service's life (the periodic repair drops them).
func TestRepairForgetsSamplesOfRemovedPods(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	ctr := e.startContainer(t, pod, "c")
	if _, err := e.rs.ContainerStats(e.ctx, &runtimeapi.ContainerStatsRequest{ContainerId: ctr}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rs.PodSandboxStats(e.ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: pod}); err != nil {
		t.Fatal(err)
	}
	if n := len(e.svc.stats.last); n == 0 {
		t.Fatal("no CPU sample kept")
	}
	if err := e.rt.Remove(e.ctx, pod, true); err != nil { // rkt rm
		t.Fatal(err)
	}
	e.svc.repair(e.ctx)
	e.svc.stats.mu.Lock()
	defer e.svc.stats.mu.Unlock()
	for k := range e.svc.stats.last {
		t.Errorf("CPU sample of %s kept after its pod was removed", k)
	}
}

// TestConcurrentRunPodSandboxSameName: freeing the names of removed pods
// must not free the name of a sandbox being created: a second
// RunPodSandbox of that name meanwhile is still refused.
func TestConcurrentRunPodSandboxSameName(t *testing.T) {
	e := newTestEnv(t)
	// a creation in progress: its name reserved, its pod not on disk yet
	e.svc.creating.Store("00000000-0000-0000-0000-000000000001", struct{}{})
	if err := e.svc.sandboxNames.Reserve(sandboxKey(sandboxConfig("web").GetMetadata()), "00000000-0000-0000-0000-000000000001"); err != nil {
		t.Fatal(err)
	}
	_, err := e.rs.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("web")})
	wantCode(t, "RunPodSandbox while another of the name runs", err, codes.AlreadyExists)
}
