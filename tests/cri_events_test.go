package tests

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIContainerEvents streams GetContainerEvents while a container is
// created, started, exits on its own and is removed: each step arrives as
// an event with the container's status.
func TestCRIContainerEvents(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	t.Cleanup(func() { removeAllPods(t, c) })

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stream, err := c.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	must(t, "GetContainerEvents", err)
	events := make(chan *runtimeapi.ContainerEventResponse, 64)
	go func() {
		for {
			ev, err := stream.Recv()
			if err != nil {
				close(events)
				return
			}
			events <- ev
		}
	}()
	time.Sleep(200 * time.Millisecond) // let the stream subscribe

	pc := podConfig("events", "")
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	cc, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId,
		Config: containerConfig("short", imgID, "sleep", "1"), SandboxConfig: pc})
	must(t, "CreateContainer", err)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cc.ContainerId})
	must(t, "StartContainer", err)

	want := []runtimeapi.ContainerEventType{
		runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT,
		runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT,
		runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, // it exits by itself
		runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT,
	}
	for i, w := range want {
		if w == runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT {
			_, err := c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: cc.ContainerId})
			must(t, "RemoveContainer", err)
		}
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("event stream ended before event %d (%v)", i, w)
			}
			if ev.ContainerId != cc.ContainerId || ev.ContainerEventType != w {
				t.Fatalf("event %d: %v for %s, want %v for %s", i, ev.ContainerEventType, ev.ContainerId, w, cc.ContainerId)
			}
			if w != runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT && (ev.PodSandboxStatus.GetId() != rp.PodSandboxId || len(ev.ContainersStatuses) != 1) {
				t.Fatalf("event %d carries no statuses: %v", i, ev)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no %v event within 30s", w)
		}
	}
}
