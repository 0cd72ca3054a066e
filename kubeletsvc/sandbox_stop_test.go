package kubeletsvc

import (
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestStopPodSandbox(t *testing.T) {
	e := newTestEnv(t)
	id := e.runPod(t, "web")
	ctr := e.startContainer(t, id, "app")
	events, err := e.rs.GetContainerEvents(e.ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	waitSubscribers(t, e.svc, 1)
	if _, err := e.rs.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		t.Fatal(err)
	}
	ev, err := events.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if ev.GetContainerId() != ctr || ev.GetContainerEventType() != runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT {
		t.Errorf("event %v %v, want STOPPED of %s", ev.GetContainerId(), ev.GetContainerEventType(), ctr)
	}
	st, err := e.rs.PodSandboxStatus(e.ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		t.Fatal(err)
	}
	if st.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("state %v after stop", st.GetStatus().GetState())
	}
	if cs := st.GetContainersStatuses(); len(cs) != 1 || cs[0].GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("container statuses %v, want one exited", cs)
	}
	// api.proto: idempotent, and no error for a sandbox that is gone
	for _, again := range []string{id, "0123abcd-0000-4000-8000-000000000000"} {
		if _, err := e.rs.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: again}); err != nil {
			t.Errorf("StopPodSandbox(%s) again: %v", again, err)
		}
	}
	_, err = e.rs.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{})
	wantCode(t, "StopPodSandbox without an ID", err, codes.InvalidArgument)
}
