package kubeletsvc

import (
	"context"
	"slices"
	"testing"
)

// The repair collects stage0's debris and the store's unreferenced
// content.
func TestRepair(t *testing.T) {
	e := newTestEnv(t)
	e.svc.repair(context.Background())
	if !slices.Contains(e.rt.called(), "GC debrisOnly=true") {
		t.Errorf("stage0 calls %v: no GC of debris only", e.rt.called())
	}
	if e.store.sweeps != 1 {
		t.Errorf("%d sweeps of the store, want 1", e.store.sweeps)
	}
}
