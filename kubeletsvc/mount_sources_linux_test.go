package kubeletsvc

import (
	"context"
	"errors"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/rkt/rkt/stage0"
)

// TestHungHostPath: a host path whose check blocks (a server that does not
// answer) fails each call at its deadline, and calls made meanwhile wait
// for the one check in flight instead of each starting its own.
func TestHungHostPath(t *testing.T) {
	release := make(chan struct{})
	var checks atomic.Int32
	resolveHostPath = func(p string) (string, error) {
		checks.Add(1)
		<-release
		return p, nil
	}
	t.Cleanup(func() { resolveHostPath = nearestExisting })
	mounts := []stage0.Mount{{Source: "/hung/path", Destination: "/data"}}
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		t0 := time.Now()
		_, err := checkMountSources(ctx, mounts)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a hung host path: %v, want DeadlineExceeded", err)
		}
		if took := time.Since(t0); took > 5*time.Second {
			t.Fatalf("a hung host path's check returned after %v", took)
		}
	}
	if n := checks.Load(); n != 1 {
		t.Errorf("%d checks of the hung path, want 1 shared", n)
	}

	close(release)
	// once it answers, the next call checks it again
	deadline := time.Now().Add(5 * time.Second)
	for {
		missing, err := checkMountSources(context.Background(), mounts)
		if err == nil && len(missing) == 0 && checks.Load() == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the path answered: %v %v, %d checks", missing, err, checks.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A host path that cannot be checked (a dead FUSE server) is the node's
// state, not a bad request: FailedPrecondition, not Unknown.
func TestHostPathCheckFails(t *testing.T) {
	resolveHostPath = func(string) (string, error) { return "", syscall.ENOTCONN }
	t.Cleanup(func() { resolveHostPath = nearestExisting })
	_, err := checkMountSources(context.Background(), []stage0.Mount{{Source: "/dead/fuse", Destination: "/d"}})
	if !errors.Is(err, syscall.ENOTCONN) || codeOf(err) != codes.FailedPrecondition {
		t.Errorf("a host path whose check fails: %v (%v), want FailedPrecondition", err, codeOf(err))
	}
}
