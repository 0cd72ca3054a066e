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

// With no listener the bus keeps nothing: containers removed outside the
// CRI would otherwise stay in it for the service's life.
func TestEventBusKeepsNothingUnheard(t *testing.T) {
	b := newEventBus()
	b.publish(&runtimeapi.ContainerEventResponse{ContainerId: "a", ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT})
	if len(b.last) != 0 {
		t.Errorf("kept %v with no listener", b.last)
	}
	ch := b.subscribe()
	b.publish(&runtimeapi.ContainerEventResponse{ContainerId: "b", ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT})
	if len(b.last) != 1 {
		t.Errorf("kept %v with a listener, want b", b.last)
	}
	b.unsubscribe(ch)
	if len(b.last) != 0 {
		t.Errorf("kept %v after the last listener left", b.last)
	}
}
