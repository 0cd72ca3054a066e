package kubeletsvc

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// lockedBuffer is a bytes.Buffer for a logger written from another
// goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRepairPassStuckOnLockIsAbandoned: a repair pass whose GC waits for a
// lock its holder never lets go (an IPAM lock of a hung plugin, the xtables
// lock) is abandoned at its deadline and logged, and the next pass runs,
// rather than every later pass waiting until the service stops.
func TestRepairPassStuckOnLockIsAbandoned(t *testing.T) {
	e := newTestEnv(t)
	var logs lockedBuffer
	e.svc.log = slog.New(slog.NewTextHandler(&logs, nil))
	e.svc.cfg.RepairInterval = 10 * time.Millisecond
	defer func(d time.Duration) { repairGCTimeout = d }(repairGCTimeout)
	repairGCTimeout = 200 * time.Millisecond

	path := filepath.Join(t.TempDir(), "lock")
	holder, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := unix.Flock(int(holder.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	e.rt.mu.Lock()
	e.rt.gcLock = path
	e.rt.mu.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.svc.repairLoop(ctx); close(done) }()
	defer func() { cancel(); holder.Close(); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var gcs int
		for _, c := range e.rt.called() {
			if c == "GC debrisOnly=true" {
				gcs++
			}
		}
		if gcs >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d repair passes in 5 s with the lock held; want a second one after the first's deadline", gcs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if out := logs.String(); !strings.Contains(out, "abandoned") {
		t.Errorf("the abandoned pass was not logged:\n%s", out)
	}
}
