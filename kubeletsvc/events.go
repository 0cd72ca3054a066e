package kubeletsvc

import (
	"sync"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// eventBus fans container lifecycle events out to GetContainerEvents
// subscribers. A slow subscriber loses events rather than blocking the
// lifecycle call that emits them (the kubelet relists anyway).
type eventBus struct {
	mu   sync.Mutex
	subs map[chan *runtimeapi.ContainerEventResponse]struct{}
}

func newEventBus() *eventBus {
	return &eventBus{subs: map[chan *runtimeapi.ContainerEventResponse]struct{}{}}
}

func (b *eventBus) subscribe() chan *runtimeapi.ContainerEventResponse {
	ch := make(chan *runtimeapi.ContainerEventResponse, 256)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	return ch
}

func (b *eventBus) unsubscribe(ch chan *runtimeapi.ContainerEventResponse) {
	b.mu.Lock()
	delete(b.subs, ch)
	b.mu.Unlock()
}

func (b *eventBus) publish(ev *runtimeapi.ContainerEventResponse) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

// GetContainerEvents streams container lifecycle events until the client
// goes away.
func (c *criService) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	ch := c.events.subscribe()
	defer c.events.unsubscribe(ch)
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case ev := <-ch:
			if err := stream.Send(ev); err != nil {
				return err
			}
		}
	}
}

// emit publishes a lifecycle event of ct with its current statuses.
func (c *criService) emit(ct *container, t runtimeapi.ContainerEventType) {
	c.events.publish(&runtimeapi.ContainerEventResponse{
		ContainerId:        ct.id,
		ContainerEventType: t,
		CreatedAt:          time.Now().UnixNano(),
		PodSandboxStatus:   sandboxStatus(ct.sb),
		ContainersStatuses: []*runtimeapi.ContainerStatus{c.containerStatus(ct)},
	})
}
