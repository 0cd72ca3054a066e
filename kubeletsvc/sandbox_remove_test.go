package kubeletsvc

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestRemovePodSandbox(t *testing.T) {
	e := newTestEnv(t)
	id := e.runPod(t, "web")
	e.startContainer(t, id, "app")
	keep := e.runPod(t, "other")
	e.createContainer(t, keep, "app")
	// a running sandbox is stopped and removed with its containers
	if _, err := e.rs.RemovePodSandbox(e.ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		t.Fatal(err)
	}
	_, err := e.rs.PodSandboxStatus(e.ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	wantCode(t, "PodSandboxStatus of a removed sandbox", err, codes.NotFound)
	l, err := e.rs.ListContainers(e.ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.GetContainers()) != 1 || l.GetContainers()[0].GetPodSandboxId() != keep {
		t.Errorf("containers %v, want only the other sandbox's", l.GetContainers())
	}
	// idempotent
	if _, err := e.rs.RemovePodSandbox(e.ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		t.Errorf("RemovePodSandbox again: %v", err)
	}
	// the names are free again
	id2 := e.runPod(t, "web")
	e.createContainer(t, id2, "app")
}

// RemovePodSandbox forgets every container of the pod, also one whose
// config no longer decodes: its name reservation and CPU samples went
// with the containers it could read only.
func TestRemovePodSandboxForgetsUnreadable(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	bad := e.startContainer(t, pod, "bad")
	e.svc.stats.rate(bad, time.Now(), 1) // a sample, as a stats call takes
	e.breakConfig(pod, bad)
	if _, err := e.rs.RemovePodSandbox(e.ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: pod}); err != nil {
		t.Fatal(err)
	}
	if _, held := e.svc.containerNames.Owner(containerKey(pod, &runtimeapi.ContainerMetadata{Name: "bad"})); held {
		t.Error("the unreadable container's name is still reserved")
	}
	e.svc.stats.mu.Lock()
	defer e.svc.stats.mu.Unlock()
	if len(e.svc.stats.last) != 0 {
		t.Errorf("CPU samples kept: %v", e.svc.stats.last)
	}
}
