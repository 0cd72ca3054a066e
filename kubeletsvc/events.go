package kubeletsvc

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/schema"
)

// eventBus fans container lifecycle events out to GetContainerEvents
// subscribers. A slow subscriber loses events rather than blocking the
// lifecycle call that emits them (the kubelet relists anyway).
type eventBus struct {
	mu   sync.Mutex
	subs map[chan *runtimeapi.ContainerEventResponse]struct{}
	// last is the last event type published per container while someone
	// listens, so that the watcher reports only what the lifecycle calls
	// did not. With no listener nothing is kept: containers removed
	// outside the CRI (rkt rm, rkt gc) would stay in it.
	last map[string]runtimeapi.ContainerEventType
}

func newEventBus() *eventBus {
	return &eventBus{
		subs: map[chan *runtimeapi.ContainerEventResponse]struct{}{},
		last: map[string]runtimeapi.ContainerEventType{},
	}
}

// subscribers returns how many streams listen.
func (b *eventBus) subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
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
	if len(b.subs) == 0 {
		clear(b.last)
	}
	b.mu.Unlock()
}

func (b *eventBus) publish(ev *runtimeapi.ContainerEventResponse) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.subs) == 0 {
		return
	}
	if ev.ContainerEventType == runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT {
		delete(b.last, ev.ContainerId)
	} else {
		if last, ok := b.last[ev.ContainerId]; ok && last == ev.ContainerEventType {
			return // the watcher and a lifecycle call both saw this transition
		}
		b.last[ev.ContainerId] = ev.ContainerEventType
	}
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
		case <-c.stopping:
			return nil // the service shuts down: end the stream so GracefulStop need not wait
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

// eventPollInterval is how often the watcher looks for containers that
// changed state on their own (an app exiting) while someone listens.
const eventPollInterval = time.Second

// watchEvents publishes the state changes no lifecycle call reported (an
// app that exits, a supervisor that dies) while GetContainerEvents streams
// are open. It returns when ctx ends.
func (c *criService) watchEvents(ctx context.Context) {
	t := time.NewTicker(eventPollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.events.subscribers() == 0 {
			continue
		}
		sbs, err := c.listSandboxes(ctx)
		if err != nil {
			continue
		}
		seen := map[string]bool{}
		for _, s := range sbs {
			for _, ct := range s.containers() {
				seen[ct.id] = true
				want := eventFor(ct)
				c.events.mu.Lock()
				last, known := c.events.last[ct.id]
				c.events.mu.Unlock()
				if !known || last != want {
					c.emit(ct, want)
				}
			}
		}
		c.events.mu.Lock()
		var gone []string
		for id := range c.events.last {
			if !seen[id] {
				gone = append(gone, id)
			}
		}
		c.events.mu.Unlock()
		for _, id := range gone {
			c.events.publish(&runtimeapi.ContainerEventResponse{ContainerId: id,
				ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, CreatedAt: time.Now().UnixNano()})
		}
	}
}

// eventFor is the event that brings a container to its current state.
func eventFor(ct *container) runtimeapi.ContainerEventType {
	switch ct.app.State {
	case schema.AppRunning:
		return runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT
	case schema.AppExited:
		return runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
	}
	return runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT
}
