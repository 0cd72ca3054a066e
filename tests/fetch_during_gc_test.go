package tests

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rkt/rkt/tests/testutil"
)

// TestFetchDuringImageGC runs `rkt image gc --grace-period=0s` and `rkt
// image list` while a slow fetch is storing its blobs: list answers at once
// (the database is not held), and gc does not take the blobs of the fetch
// in flight, which completes with a whole image.
//
// The store alone does not guard this (found by this test, 2026-11-30): GC
// removes every unreferenced blob older than its cutoff, including blobs a
// fetch in another process has stored but not yet recorded, so that fetch
// records an image whose layer is gone. `rkt fetch` notices when it unpacks
// (a missing blob), drops the record and fetches once more; store.Fetch
// callers that do not unpack (the CRI's PullImage) need a store-side guard.
func TestFetchDuringImageGC(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	data := testutil.RandomLayer(t, 21, "data", 4, 3<<20)
	img := testutil.BusyboxWith(t, testutil.ImageConfig{}, data)
	ref := reg.Push(t, "gcrace:1", img)
	reg.SetBlobRate(1 << 20) // busybox (~1 MB) lands after ~1 s, data after ~3 s

	var fetch testutil.Result
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		fetch = env.Run("fetch", "--no-progress", ref)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(dirEntries(t, casDir(env.DataDir, "blobs", "sha256"))) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if time.Now().After(deadline) {
		t.Fatalf("no blob stored within 10 s")
	}
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	if out, err := env.Command(ctx, "image", "list").CombinedOutput(); err != nil {
		t.Errorf("image list during a fetch: %v\n%s", err, out)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("image list waited %s for the fetch", d)
	}
	gc := env.Run("image", "gc", "--grace-period=0s")
	t.Logf("gc during fetch: %s", strings.TrimSpace(gc.Stdout+gc.Stderr))
	wg.Wait()
	if fetch.Code != 0 {
		t.Fatalf("fetch during gc failed: %s", fetch)
	}
	id := testutil.ImageID(t, img)
	assertRendered(t, env, id, layerSums(t, data))
	for _, l := range []string{"blobs/sha256"} {
		if n := len(dirEntries(t, casDir(env.DataDir, l))); n != 4 {
			t.Errorf("cas/%s has %d entries after the fetch, want 4 (manifest, config, 2 layers)", l, n)
		}
	}
}
