package kubeletsvc

import (
	"context"
	"errors"
	"time"

	"github.com/rkt/rkt/stage0"
)

// DefaultRepairInterval is how often the service collects, besides once at
// start, what a crash left that no CRI call reaches
// (stage0.GCOptions.DebrisOnly, store.SweepUnreferenced).
const DefaultRepairInterval = 5 * time.Minute

// repairGCTimeout bounds stage0's and networking's GC in one repair pass:
// a pass waiting for a lock whose holder never lets go (a hung plugin's
// IPAM lock, iptables -w on the xtables lock) is abandoned there, and the
// next pass takes up what it left. A normal pass takes milliseconds, and
// seconds after a reboot (a CNI DEL per vanished pod); 4 minutes is twice
// the CNI plugin timeout, so one hung plugin, killed at 2 minutes, does not
// by itself abandon the pass, and under the default interval, so a stuck
// pass ends before the next one is due.
var repairGCTimeout = 4 * time.Minute

// repairLoop runs the repair at start and every Config.RepairInterval until
// ctx ends.
func (c *criService) repairLoop(ctx context.Context) {
	every := c.cfg.RepairInterval
	if every <= 0 {
		every = DefaultRepairInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		c.repair(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// repair removes aborted prepares and interrupted deletions, releases the
// network resources of vanished pods and the resources of pods cut off
// while starting, and frees what failed or interrupted pulls stored (no
// CRI call reaches it; the kubelet's image GC only sees images).
func (c *criService) repair(ctx context.Context) {
	c.repairPods(ctx)
	c.forgetGone(ctx)
	if sbs, err := c.listSandboxes(ctx); err == nil {
		c.warnUnreadable(sbs)
	}
	res, err := c.store.SweepUnreferenced(ctx)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			c.log.Error("cannot free the content of failed pulls", "error", err)
		}
	case res.Blobs > 0 || res.Trees > 0:
		c.log.Info("freed the content of failed pulls", "blobs", res.Blobs, "trees", res.Trees, "bytes", res.Bytes)
	}
}

func (c *criService) repairPods(ctx context.Context) {
	gctx, cancel := context.WithTimeout(ctx, repairGCTimeout)
	defer cancel()
	res, err := c.rt.GC(gctx, stage0.GCOptions{DebrisOnly: true})
	if ctx.Err() == nil && errors.Is(gctx.Err(), context.DeadlineExceeded) {
		c.log.Error("abandoned the collection of debris at its deadline; the next repair takes it up",
			"timeout", repairGCTimeout, "error", err)
	}
	if err != nil {
		if gctx.Err() == nil {
			c.log.Error("cannot collect the debris of interrupted pod operations", "error", err)
		}
		return
	}
	if len(res.Removed) > 0 {
		c.log.Info("removed the debris of interrupted pod operations", "pods", res.Removed)
	}
	if len(res.Released) > 0 {
		c.log.Info("released the resources of pods cut off while starting", "pods", res.Released)
	}
	for uuid, err := range res.Errors {
		c.log.Warn("cannot collect the debris of an interrupted pod operation", "pod", uuid, "error", err)
	}
	if res.Network != nil {
		c.log.Warn("cannot release network resources of vanished pods", "error", res.Network)
	}
}
