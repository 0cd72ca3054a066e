package lock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestLockConflicts(t *testing.T) {
	for _, kind := range []Kind{Dir, RegFile} {
		path := t.TempDir()
		if kind == RegFile {
			path = filepath.Join(path, "f.lock")
		}
		ex, err := TryExclusive(path, kind)
		if err != nil {
			t.Fatalf("kind %d: exclusive: %v", kind, err)
		}
		if _, err := TryShared(path, kind); !errors.Is(err, ErrLocked) {
			t.Fatalf("kind %d: shared while exclusive held: got %v, want ErrLocked", kind, err)
		}
		if _, err := TryExclusive(path, kind); !errors.Is(err, ErrLocked) {
			t.Fatalf("kind %d: second exclusive: got %v, want ErrLocked", kind, err)
		}
		if locked, err := IsLocked(path, kind); err != nil || !locked {
			t.Fatalf("kind %d: IsLocked = %v, %v; want true", kind, locked, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		if _, err := Exclusive(ctx, path, kind); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("kind %d: blocking exclusive: got %v, want deadline", kind, err)
		}
		cancel()
		ex.Close()
		if locked, err := IsLocked(path, kind); err != nil || locked {
			t.Fatalf("kind %d: IsLocked after close = %v, %v; want false", kind, locked, err)
		}
		s1, err := TryShared(path, kind)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := TryShared(path, kind)
		if err != nil {
			t.Fatalf("kind %d: two shared locks: %v", kind, err)
		}
		s1.Close()
		s2.Close()
	}
}

func TestLockWaitsForRelease(t *testing.T) {
	dir := t.TempDir()
	ex, err := TryExclusive(dir, Dir)
	if err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(20 * time.Millisecond); ex.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := Exclusive(ctx, dir, Dir)
	if err != nil {
		t.Fatalf("lock not obtained after release: %v", err)
	}
	l.Close()
}

// TestLockInheritedByChild checks the property pods rely on: a child that
// inherits the locked descriptor keeps the lock after the parent closes it.
func TestLockInheritedByChild(t *testing.T) {
	dir := t.TempDir()
	ex, err := TryExclusive(dir, Dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "0.3")
	cmd.ExtraFiles = []*os.File{ex.File()}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ex.Close()
	if locked, _ := IsLocked(dir, Dir); !locked {
		t.Fatal("lock released although the child holds the descriptor")
	}
	cmd.Wait()
	if locked, _ := IsLocked(dir, Dir); locked {
		t.Fatal("lock still held after the child exited")
	}
}
