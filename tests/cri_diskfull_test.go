package tests

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIDiskFull: with the data dir on a full filesystem, pulls and pod
// creation fail with ResourceExhausted and the service keeps serving; once
// space is free, pulls and pods work again with no manual gc, and the index
// still holds what it held.
func TestCRIDiskFull(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	if err := syscall.Mount("tmpfs", env.DataDir, "tmpfs", 0, "size=64m,mode=0751"); err != nil {
		t.Skipf("cannot mount a tmpfs for the data dir: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(env.DataDir, syscall.MNT_DETACH) })
	svc := startCRIService(t, env, "--repair-interval=1s")
	c := dialCRI(t, svc)
	logDir := podLogDir(t, c)
	base, baseID := pullTestImage(t, c)

	noise := make([]byte, 4<<20)
	rand.Read(noise)
	img := testutil.BusyboxWith(t, testutil.ImageConfig{}, testutil.Layer(t, testutil.Entry{Name: "noise", Body: noise}))
	reg := testutil.StartRegistry(t)
	big := reg.Push(t, "rkt-test/big:1", img)

	// Fill the filesystem, leaving a few KiB.
	filler := filepath.Join(env.DataDir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()

	ctx := rpcCtx(t)
	_, err = c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: big}})
	if statusCode(err) != "ResourceExhausted" {
		t.Errorf("PullImage on a full disk: %v, want ResourceExhausted", err)
	}
	pc := podConfig("diskfull", "")
	pc.LogDirectory = ""
	_, err = c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	if statusCode(err) != "ResourceExhausted" {
		t.Errorf("RunPodSandbox on a full disk: %v, want ResourceExhausted", err)
	}
	// Still serving, and the index intact.
	imgs, err := c.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	must(t, "ListImages on a full disk", err)
	if len(imgs.Images) != 1 || imgs.Images[0].Id != baseID {
		t.Errorf("images on a full disk: %v, want only %s", imgs.Images, baseID)
	}
	if _, err := c.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		t.Errorf("Version on a full disk: %v", err)
	}

	// Space comes back: everything works, nobody ran a gc.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err = c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: big}})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PullImage 30s after space came back: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	_, cid := runPodWithContainer(t, c, "after-diskfull", base, logDir)
	st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: cid})
	must(t, "ContainerStatus", err)
	if st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("a pod after the disk was freed: %v", st.Status.State)
	}
	if r := env.Run("image", "list"); r.Code != 0 {
		t.Errorf("the index after a full disk: %s", r)
	}
}
