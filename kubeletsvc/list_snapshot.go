package kubeletsvc

import (
	"context"
	"sync"
	"sync/atomic"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// listSnapshot is the CRI view of every pod at one generation of stage0's
// in-memory view: while the generation stays, List* calls answer from it
// (the kubelet relists every second; at 500 pods, translating the pods
// again was most of a call). Everything in it is shared: read-only.
type listSnapshot struct {
	gen    uint64 // 0: not kept
	sbs    []*sandbox
	byUUID map[string]*sandbox

	sandboxesOnce sync.Once
	sandboxes     []*runtimeapi.PodSandbox // unfiltered ListPodSandbox items
	sandboxesEnc  atomic.Pointer[encodedResponse]

	ctrsOnce sync.Once
	ctrs     []*container // of every sandbox
	ctrsOf   map[*sandbox][]*container

	containersOnce sync.Once
	containers     []*runtimeapi.Container // unfiltered ListContainers items
	containersEnc  atomic.Pointer[encodedResponse]
}

// snapshot returns the CRI view of the pods, kept while nothing changed.
func (c *criService) snapshot(ctx context.Context) (*listSnapshot, error) {
	if s := c.snap.Load(); s != nil && s.gen == c.rt.Generation() {
		return s, nil
	}
	pods, gen, err := c.rt.ListGen(ctx)
	if err != nil {
		return nil, err
	}
	s := &listSnapshot{gen: gen, byUUID: make(map[string]*sandbox, len(pods))}
	for _, p := range pods {
		sb, err := asSandbox(p)
		if err != nil {
			c.log.Warn("skipping pod with unreadable CRI metadata", "pod", p.UUID, "error", err)
			continue
		}
		if sb != nil {
			s.sbs = append(s.sbs, sb)
			s.byUUID[sb.ID()] = sb
		}
	}
	if gen != 0 {
		c.snap.Store(s)
	}
	return s, nil
}

// podSandboxItems returns the unfiltered ListPodSandbox items.
func (s *listSnapshot) podSandboxItems() []*runtimeapi.PodSandbox {
	s.sandboxesOnce.Do(func() {
		s.sandboxes = make([]*runtimeapi.PodSandbox, 0, len(s.sbs))
		for _, sb := range s.sbs {
			s.sandboxes = append(s.sandboxes, podSandboxItem(sb))
		}
		if s.gen != 0 {
			s.sandboxesEnc.Store(encode(&runtimeapi.ListPodSandboxResponse{Items: s.sandboxes}))
		}
	})
	return s.sandboxes
}

// podSandboxResponse is the unfiltered ListPodSandbox response.
func (s *listSnapshot) podSandboxResponse() *runtimeapi.ListPodSandboxResponse {
	items := s.podSandboxItems()
	if e := s.sandboxesEnc.Load(); e != nil {
		return e.msg.(*runtimeapi.ListPodSandboxResponse)
	}
	return &runtimeapi.ListPodSandboxResponse{Items: items}
}

// allContainers returns the containers of every sandbox.
func (s *listSnapshot) allContainers() []*container {
	s.ctrsOnce.Do(func() {
		s.ctrsOf = make(map[*sandbox][]*container, len(s.sbs))
		for _, sb := range s.sbs {
			ctrs := sb.containers()
			s.ctrs = append(s.ctrs, ctrs...)
			s.ctrsOf[sb] = ctrs
		}
	})
	return s.ctrs
}

// containersOf returns the containers of one of the snapshot's sandboxes.
func (s *listSnapshot) containersOf(sb *sandbox) []*container {
	s.allContainers()
	return s.ctrsOf[sb]
}

// containerItems returns the unfiltered ListContainers items.
func (s *listSnapshot) containerItems(c *criService) []*runtimeapi.Container {
	s.containersOnce.Do(func() {
		ctrs := s.allContainers()
		s.containers = make([]*runtimeapi.Container, 0, len(ctrs))
		for _, ct := range ctrs {
			s.containers = append(s.containers, c.containerItem(ct))
		}
		if s.gen != 0 {
			s.containersEnc.Store(encode(&runtimeapi.ListContainersResponse{Containers: s.containers}))
		}
	})
	return s.containers
}

// containersResponse is the unfiltered ListContainers response.
func (s *listSnapshot) containersResponse(c *criService) *runtimeapi.ListContainersResponse {
	items := s.containerItems(c)
	if e := s.containersEnc.Load(); e != nil {
		return e.msg.(*runtimeapi.ListContainersResponse)
	}
	return &runtimeapi.ListContainersResponse{Containers: items}
}
