package networking

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStateLockHonoursContext: a call waiting for the network state lock
// (<data dir>/networks/lock), held by another process (here another open
// file description), gives up when its context ends instead of blocking in
// flock(2) for as long as the holder keeps it (a `rkt gc` whose iptables
// -w waits for the xtables lock without a deadline).
func TestStateLockHonoursContext(t *testing.T) {
	cfg := Config{DataDir: t.TempDir()}
	if err := cfg.ensureStateDir(); err != nil {
		t.Fatal(err)
	}
	holder := holdLock(t, filepath.Join(cfg.stateDir(), "lock"))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		// the subnet has no users: with the lock, nothing runs
		done <- releaseMasquerade(ctx, cfg, "10.99.0.0/24", "0d2c9b4e-4a1e-4c6e-9a44-5f1b2c3d4e5f")
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("releaseMasquerade succeeded while another holder had the network state lock")
		}
	case <-time.After(3 * time.Second):
		holder.Close() // let the stuck call go
		<-done
		t.Fatal("releaseMasquerade still waits for the network state lock 3 s after its context ended")
	}
}

// TestGCIPAMLockHonoursContext: GC waiting for a network's IPAM lock
// (<networks>/ipam/<network>/lock, which host-local holds while it
// allocates), held by another holder, gives up when its context ends
// instead of blocking in flock(2) for as long as the holder keeps it.
func TestGCIPAMLockHonoursContext(t *testing.T) {
	cfg := Config{DataDir: t.TempDir()}
	dir := filepath.Join(cfg.ipamDir(), "held")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	holder := holdLock(t, filepath.Join(dir, "lock"))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- GC(ctx, cfg, func(string) bool { return false }) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("GC with the IPAM lock held elsewhere: %v; want the context's deadline", err)
		}
	case <-time.After(3 * time.Second):
		holder.Close() // let the stuck call go
		<-done
		t.Fatal("GC still waits for the IPAM lock 3 s after its context ended")
	}
}

// holdLock takes an exclusive flock on path (created if missing), as
// another process would hold it, until the test ends or the file is
// closed.
func holdLock(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return f
}
