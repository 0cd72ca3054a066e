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
