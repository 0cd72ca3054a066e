package kubeletsvc

import (
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestStartContainer(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	id := e.createContainer(t, pod, "app")
	if _, err := e.rs.StartContainer(e.ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	st, err := e.rs.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		t.Fatal(err)
	}
	if s := st.GetStatus(); s.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || s.GetStartedAt() < s.GetCreatedAt() || s.GetFinishedAt() != 0 {
		t.Errorf("status after start: %v", s)
	}
	_, err = e.rs.StartContainer(e.ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	wantCode(t, "starting a running container", err, codes.FailedPrecondition)
	_, err = e.rs.StartContainer(e.ctx, &runtimeapi.StartContainerRequest{ContainerId: id[:32] + "00000000000000000000000000000000"})
	wantCode(t, "unknown container of a known pod", err, codes.NotFound)
	_, err = e.rs.StartContainer(e.ctx, &runtimeapi.StartContainerRequest{})
	wantCode(t, "no ID", err, codes.InvalidArgument)
}
