package tests

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIInterruptedPullIsFreed: a service killed in the middle of a pull
// leaves the layers it had finished as blobs no image references; the
// restarted service frees them (and its temporary files) by itself, with
// no rkt gc by hand.
func TestCRIInterruptedPullIsFreed(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	noise := make([]byte, 3<<20) // incompressible: slow to download
	rand.Read(noise)
	img := testutil.BusyboxWith(t, testutil.ImageConfig{},
		testutil.Layer(t, testutil.File("small", "done first")),
		testutil.Layer(t, testutil.Entry{Name: "big", Body: noise}))
	reg := testutil.StartRegistry(t)
	ref := reg.Push(t, "rkt-test/interrupted:1", img)
	reg.SetBlobRate(512 << 10)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	blobs := casDir(env.DataDir, "blobs", "sha256")
	deadline := time.Now().Add(30 * time.Second)
	for len(dirEntries(t, blobs)) < 2 { // the busybox and the small layer
		if time.Now().After(deadline) {
			t.Fatalf("the pull stored no layer in 30s: %v", dirEntries(t, blobs))
		}
		time.Sleep(20 * time.Millisecond)
	}
	svc.Kill()
	cancel()
	if left := dirEntries(t, blobs); len(left) == 0 {
		t.Fatal("nothing left to repair: the test did not interrupt a pull")
	}
	svc.Restart()
	deadline = time.Now().Add(30 * time.Second)
	for {
		blobsLeft := dirEntries(t, blobs)
		tmpLeft := dirEntries(t, casDir(env.DataDir, "tmp"))
		treesLeft := dirEntries(t, casDir(env.DataDir, "tree"))
		if len(blobsLeft)+len(tmpLeft)+len(treesLeft) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after the restart: blobs %v, temporary files %v, trees %v\n%s", blobsLeft, tmpLeft, treesLeft, svc.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// And the image can still be pulled whole.
	reg.SetBlobRate(0)
	_, err := c.PullImage(rpcCtx(t), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	must(t, "PullImage after the repair", err)
}
