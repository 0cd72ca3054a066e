package kubeletsvc

import (
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestRemoveContainer(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	id := e.startContainer(t, pod, "app")
	keep := e.createContainer(t, pod, "other")
	if _, err := e.rs.RemoveContainer(e.ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	_, err := e.rs.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	wantCode(t, "status of a removed container", err, codes.NotFound)
	if _, err := e.rs.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: keep}); err != nil {
		t.Errorf("the other container: %v", err)
	}
	if _, err := e.rs.RemoveContainer(e.ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Errorf("RemoveContainer again: %v", err)
	}
	e.createContainer(t, pod, "app") // the name is free again
}
