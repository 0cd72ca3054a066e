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
		ctrs, err := s.containers()
		if err != nil {
			c.log.Warn("cannot read the containers of a sandbox", "pod", s.ID(), "error", err)
			continue
		}
		for _, ct := range ctrs {
			if err := c.containerNames.Reserve(containerKey(s.ID(), ct.cfg.GetMetadata()), ct.id); err != nil {
				c.log.Warn("duplicate container name on disk", "container", ct.id, "error", err)
			}
			nc++
		}
	}
	c.log.Info("recovered CRI state from the pod directories", "sandboxes", len(sbs), "containers", nc)
	return nil
}
