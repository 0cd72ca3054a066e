package kubeletsvc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

// A sandbox ID is its pod's UUID. A container ID is 64 hex digits: the pod
// UUID without dashes, then 32 random ones, so the pod of a container is
// known from its ID alone.

// newContainerID returns a new container ID in the pod podUUID.
func newContainerID(podUUID string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return strings.ReplaceAll(podUUID, "-", "") + hex.EncodeToString(b[:]), nil
}

// podOfContainerID returns the pod UUID a full container ID names.
func podOfContainerID(id string) (string, bool) {
	if len(id) != 64 {
		return "", false
	}
	if _, err := hex.DecodeString(id); err != nil {
		return "", false
	}
	h := id[:32]
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32], true
}

// sandbox is a CRI sandbox: a stage0 pod with CRI metadata.
type sandbox struct {
	pod   *stage0.PodStatus
	cfg   *runtimeapi.PodSandboxConfig
	attrs *rawAttrs // of its stats items
	kept  atomic.Pointer[keptStats[runtimeapi.PodSandboxStats]]

	ctrsOnce   sync.Once
	ctrs       []*container
	unreadable []error // of the apps whose CRI config cannot be decoded
}

// ID returns the sandbox ID.
func (s *sandbox) ID() string { return s.pod.UUID }

// ready reports whether the sandbox's supervisor runs.
func (s *sandbox) ready() bool { return s.pod.State == stage0.PodRunning }

// container is a CRI container: an app of a CRI sandbox.
type container struct {
	id  string
	sb  *sandbox
	app *stage0.AppStatus
	cfg *runtimeapi.ContainerConfig
	// attrs is the encoded attributes of its stats items
	attrs *rawAttrs
	kept  atomic.Pointer[keptStats[runtimeapi.ContainerStats]]
	// status is its kept ContainerStatus answer (container_status.go)
	status atomic.Pointer[keptStatus]
}

// asSandbox returns the CRI view of a pod; nil for pods that are not CRI
// sandboxes (made by the CLI) or still embryos.
func asSandbox(ps *stage0.PodStatus) (*sandbox, error) {
	if ps.Manifest == nil {
		return nil, nil
	}
	cfg, err := sandboxConfigOf(ps.Manifest.Annotations)
	if err != nil || cfg == nil {
		return nil, err
	}
	return &sandbox{pod: ps, cfg: cfg, attrs: &rawAttrs{}}, nil
}

// containers returns the CRI containers of a sandbox, made once per
// sandbox: shared, read-only. An app whose CRI config cannot be decoded
// is left out, as stage0 leaves out a pod it cannot read: it fails its
// own lookups (getContainer), not every list of the node.
func (s *sandbox) containers() []*container {
	s.ctrsOnce.Do(func() {
		s.ctrs, s.unreadable = s.readContainers(func(string) bool { return true })
	})
	return s.ctrs
}

// unreadableContainers returns why containers left apps out.
func (s *sandbox) unreadableContainers() []error {
	s.containers()
	return s.unreadable
}

// readContainers makes the CRI containers of a sandbox whose ID matches,
// decoding the config of those only, and returns the errors of those
// whose config cannot be decoded.
func (s *sandbox) readContainers(match func(id string) bool) ([]*container, []error) {
	var out []*container
	var errs []error
	for i := range s.pod.Apps {
		a := &s.pod.Apps[i]
		if a.App.Annotations[annoKind] != kindContainer || !match(a.App.Annotations[annoContainerID]) {
			continue
		}
		cfg, err := containerConfigOf(a.App.Annotations)
		if err != nil {
			errs = append(errs, fmt.Errorf("cannot read container %s (app %q of pod %s): %w", a.App.Annotations[annoContainerID], a.App.Name, s.pod.UUID, err))
			continue
		}
		if cfg == nil {
			continue
		}
		out = append(out, &container{id: a.App.Annotations[annoContainerID], sb: s, app: a, cfg: cfg, attrs: &rawAttrs{}})
	}
	return out, errs
}

// containersOrMatching returns the sandbox's containers, or, when an
// app's config cannot be decoded, those whose ID matches: a lookup that
// matches an unreadable app fails (it exists: not NotFound).
func (s *sandbox) containersOrMatching(match func(id string) bool) ([]*container, error) {
	ctrs := s.containers()
	if len(s.unreadable) == 0 {
		return ctrs, nil
	}
	ctrs, errs := s.readContainers(match)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return ctrs, nil
}

// listSandboxes returns every CRI sandbox.
// The slice and the sandboxes are shared (list_snapshot.go): read-only.
func (c *criService) listSandboxes(ctx context.Context) ([]*sandbox, error) {
	s, err := c.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return s.sbs, nil
}

// getSandbox finds a sandbox by ID (or unique ID prefix).
func (c *criService) getSandbox(ctx context.Context, id string) (*sandbox, error) {
	if id == "" {
		return nil, invalidf("no pod sandbox ID given")
	}
	ps, err := c.rt.Status(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("pod sandbox %q: %w", id, err)
	}
	// stage0 returns the same status while the pod did not change: the
	// kept snapshot's sandbox is then this one, with what it keeps (its
	// containers, their kept answers)
	if snap := c.snap.Load(); snap != nil {
		if s := snap.byUUID[ps.UUID]; s != nil && s.pod == ps {
			return s, nil
		}
	}
	s, err := asSandbox(ps)
	if err != nil {
		return nil, fmt.Errorf("pod sandbox %q: %w", id, err)
	}
	if s == nil {
		return nil, notFoundf("pod sandbox %q: pod %s is not a CRI sandbox", id, ps.UUID)
	}
	return s, nil
}

// getContainer finds a container by ID (or unique ID prefix).
func (c *criService) getContainer(ctx context.Context, id string) (*container, error) {
	if id == "" {
		return nil, invalidf("no container ID given")
	}
	if uuid, ok := podOfContainerID(id); ok {
		s, err := c.getSandbox(ctx, uuid)
		if err != nil {
			if errors.Is(err, stage0.ErrPodNotFound) || errors.Is(err, errNotFound) {
				return nil, notFoundf("container %q: its pod sandbox %s does not exist", id, uuid)
			}
			return nil, err
		}
		ctrs, err := s.containersOrMatching(func(cid string) bool { return cid == id })
		if err != nil {
			return nil, err
		}
		for _, ct := range ctrs {
			if ct.id == id {
				return ct, nil
			}
		}
		return nil, notFoundf("container %q", id)
	}
	sbs, err := c.listSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	var found []*container
	for _, s := range sbs {
		ctrs, err := s.containersOrMatching(func(cid string) bool { return strings.HasPrefix(cid, id) })
		if err != nil {
			return nil, err
		}
		for _, ct := range ctrs {
			if strings.HasPrefix(ct.id, id) {
				found = append(found, ct)
			}
		}
	}
	switch len(found) {
	case 0:
		return nil, notFoundf("container %q", id)
	case 1:
		return found[0], nil
	}
	return nil, invalidf("container ID prefix %q is ambiguous (%d matches)", id, len(found))
}
