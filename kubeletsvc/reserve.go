package kubeletsvc

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/rkt/rkt/kubeletsvc/internal/registrar"
	"github.com/rkt/rkt/stage0"
)

// reserve reserves the CRI name key for id in reg, which the caller
// creates next (it calls the returned func once the creation returned,
// after releasing the name if the creation failed). A name whose owner is
// not being created and is no longer listed (removed outside the CRI:
// `rkt rm`, `rkt gc`, `rkt app rm`; or become unreadable; the service
// learns of it only here) is taken over: the kubelet, finding no sandbox
// of a pod, runs one again with attempt 0, and a restarted service would
// not have reserved the name (recover).
func (c *criService) reserve(ctx context.Context, reg *registrar.Registrar, key, id string, gone func(ctx context.Context, owner string) bool) (done func(), err error) {
	c.creating.Store(id, struct{}{})
	done = func() { c.creating.Delete(id) }
	err = reg.Reserve(key, id)
	var er *registrar.ErrReserved
	if errors.As(err, &er) {
		if _, busy := c.creating.Load(er.Owner); !busy && gone(ctx, er.Owner) {
			c.log.Info("taking over the name of a sandbox or container removed outside the CRI or unreadable", "name", key, "owner", er.Owner)
			reg.ReleaseNameOf(key, er.Owner)
			c.forgetIDs(er.Owner)
			err = reg.Reserve(key, id)
		}
	}
	if err != nil {
		done()
		return nil, err
	}
	return done, nil
}

// sandboxGone reports whether the sandbox of an ID is left out of lists,
// as recover leaves it: its pod is gone, or cannot be read (a newer rkt's
// or a corrupt manifest: stage0 leaves it out), or its CRI config cannot
// be decoded. A pod that is not a CRI sandbox (yet) is not gone.
func (c *criService) sandboxGone(ctx context.Context, id string) bool {
	ps, err := c.rt.Status(ctx, id)
	if err != nil {
		return errors.Is(err, stage0.ErrPodNotFound) || ctx.Err() == nil
	}
	_, err = asSandbox(ps)
	return err != nil
}

// containerGone reports whether a container is left out of lists: gone,
// or unreadable (its sandbox, or its CRI config).
func (c *criService) containerGone(ctx context.Context, id string) bool {
	_, err := c.getContainer(ctx, id)
	return isNotFound(err) || (err != nil && ctx.Err() == nil)
}

// forgetIDs drops what the service keeps in memory of a sandbox (and its
// containers) or of a container, by ID: names and CPU samples.
func (c *criService) forgetIDs(id string) {
	if _, ok := podOfContainerID(id); ok {
		c.containerNames.Release(id)
		c.stats.forget(id)
		return
	}
	ofPod := func(cid string) bool { pod, ok := podOfContainerID(cid); return ok && pod == id }
	c.containerNames.ReleaseIDs(ofPod)
	c.stats.forgetMatching(func(key string) bool { return key == id || ofPod(key) })
	c.sandboxNames.Release(id)
}

// forgetGone drops the CPU samples of sandboxes and containers that are
// gone (removed outside the CRI: no RemovePodSandbox or RemoveContainer
// drops them).
func (c *criService) forgetGone(ctx context.Context) {
	snap, err := c.snapshot(ctx)
	if err != nil {
		return
	}
	ctrs := snap.allContainers()
	live := make(map[string]bool, len(snap.sbs)+len(ctrs))
	for _, s := range snap.sbs {
		live[s.ID()] = true
	}
	for _, ct := range ctrs {
		live[ct.id] = true
	}
	c.stats.mu.Lock()
	keys := slices.Collect(maps.Keys(c.stats.last))
	c.stats.mu.Unlock()
	gone := map[string]bool{}
	for _, key := range keys {
		if _, busy := c.creating.Load(key); live[key] || busy {
			continue
		}
		pod := key
		if p, ok := podOfContainerID(key); ok {
			pod = p
		}
		// a container of a listed sandbox is gone; else its sandbox must be
		if snap.byUUID[pod] != nil || c.sandboxGone(ctx, pod) {
			gone[key] = true
		}
	}
	if len(gone) > 0 {
		c.stats.forgetMatching(func(key string) bool { return gone[key] })
	}
}
