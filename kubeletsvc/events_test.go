package kubeletsvc

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestEventBusOneEventPerTransition(t *testing.T) {
	b := newEventBus()
	ch := b.subscribe()
	defer b.unsubscribe(ch)
	ev := func(id string, typ runtimeapi.ContainerEventType) *runtimeapi.ContainerEventResponse {
		return &runtimeapi.ContainerEventResponse{ContainerId: id, ContainerEventType: typ}
	}
	b.publish(ev("a", runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT))
	b.publish(ev("a", runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)) // duplicate: dropped
	b.publish(ev("a", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT))
	b.publish(ev("a", runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT))
	b.publish(ev("a", runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)) // a new container of that ID
	want := []runtimeapi.ContainerEventType{
		runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT,
		runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT,
		runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT,
		runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT,
	}
	for i, w := range want {
		select {
		case got := <-ch:
			if got.ContainerEventType != w {
				t.Fatalf("event %d = %v, want %v", i, got.ContainerEventType, w)
			}
		default:
			t.Fatalf("event %d (%v) missing", i, w)
		}
	}
	select {
	case got := <-ch:
		t.Fatalf("unexpected event %v", got)
	default:
	}
}
