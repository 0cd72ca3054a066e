package store

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
)

// Two pulls of one image (the kubelet pulls in parallel for two pods):
// pull A imports and unpacks it and returns its ID; pull B, started
// first, is cancelled (its pod deleted) while it unpacks. B must not remove
// the image A imported and answered with: only an image B itself recorded
// is B's to roll back.
func TestCancelledPullKeepsImageAnotherPullImported(t *testing.T) {
	reg := startRegistry(t)
	ref := reg.push(t, "race/img:1", testImage(t, "R=1", []entry{{name: "a", body: "a"}}))
	s := newStore(t)
	var imported atomic.Pointer[Image]
	var aErr atomic.Pointer[error]
	var once atomic.Bool
	hook := func(w http.ResponseWriter, req *http.Request) bool {
		if req.URL.Path != "/v2/" && once.CompareAndSwap(false, true) {
			// B reached the registry: A pulls the whole image meanwhile.
			img, err := s.Pull(context.Background(), ref, PullOptions{FetchOptions: FetchOptions{PullPolicy: PullUpdate}})
			if err != nil {
				aErr.Store(&err)
			} else {
				imported.Store(img)
				// B finds the trees missing (e.g. A's unpacking still running)
				for _, l := range img.Layers {
					h, _ := digestHex(l.ChainID)
					s.removeTreeDir(h)
				}
			}
		}
		return false
	}
	reg.hook.Store(&hook)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := s.Pull(ctx, ref, PullOptions{
		FetchOptions: FetchOptions{PullPolicy: PullUpdate},
		Status:       func(string) { cancel() }, // cancelled as it starts unpacking
	})
	if p := aErr.Load(); p != nil {
		t.Fatalf("pull A: %v", *p)
	}
	a := imported.Load()
	if a == nil {
		t.Fatal("pull A did not run")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("pull B: %v, want it cancelled", err)
	}
	if got, err := s.ResolveImage(a.ID); err != nil || got.ID != a.ID {
		t.Errorf("the image pull A returned (%s) is gone after pull B was cancelled: %v", a.ID, err)
	}
}
