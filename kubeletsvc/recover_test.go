package kubeletsvc

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A restarted service refuses the names its pods hold, as before.
func TestRecoverNames(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	e.createContainer(t, pod, "app")
	restarted := newService(e.svc.cfg, e.store, e.rt, nil)
	if err := restarted.recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := restarted.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("web")})
	wantCode(t, "a recovered sandbox name", toStatus(err), codes.AlreadyExists)
	_, err = restarted.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: containerConfig("app", "busybox")})
	wantCode(t, "a recovered container name", toStatus(err), codes.AlreadyExists)
}

// TestRecoverNamesBesideUnreadableContainer: a restarted service refuses
// the names of a sandbox's containers also when another container of it
// has a CRI config that cannot be decoded (that one's name cannot be
// known; its siblings' were all left free, to be taken twice).
func TestRecoverNamesBesideUnreadableContainer(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	e.createContainer(t, pod, "good")
	e.breakConfig(pod, e.createContainer(t, pod, "bad"))
	restarted := newService(e.svc.cfg, e.store, e.rt, nil)
	if err := restarted.recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := restarted.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: containerConfig("good", "busybox")})
	wantCode(t, "the recovered name of a container beside an unreadable one", toStatus(err), codes.AlreadyExists)
}
