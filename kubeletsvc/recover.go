package kubeletsvc

import (
	"context"
	"fmt"
)

// recover rebuilds the name reservations from the pod directories, so
// that after a restart duplicates are refused as before.
func (c *criService) recover(ctx context.Context) error {
	sbs, err := c.listSandboxes(ctx)
	if err != nil {
		return fmt.Errorf("cannot list pods: %w", err)
	}
	nc := 0
	for _, s := range sbs {
		if err := c.sandboxNames.Reserve(sandboxKey(s.cfg.GetMetadata()), s.ID()); err != nil {
			c.log.Warn("duplicate sandbox name on disk", "pod", s.ID(), "error", err)
		}
		for _, ct := range s.containers() {
			if err := c.containerNames.Reserve(containerKey(s.ID(), ct.cfg.GetMetadata()), ct.id); err != nil {
				c.log.Warn("duplicate container name on disk", "container", ct.id, "error", err)
			}
			nc++
		}
	}
	c.log.Info("recovered CRI state from the pod directories", "sandboxes", len(sbs), "containers", nc)
	c.warnUnreadable(sbs)
	return nil
}

// warnUnreadable names the containers left out of lists because their
// CRI config cannot be decoded: at start and at each repair, as no call
// of the kubelet reaches them.
func (c *criService) warnUnreadable(sbs []*sandbox) {
	for _, s := range sbs {
		for _, err := range s.unreadableContainers() {
			c.log.Warn("container left out of lists", "pod", s.ID(), "error", err)
		}
	}
}
