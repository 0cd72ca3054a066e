package kubeletsvc

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/store"
)

func TestPullImage(t *testing.T) {
	e := newTestEnv(t)
	e.svc.cfg.InsecureHTTP = true
	img := testImage("registry.local:5000/app:v1")
	e.store.remote[img.Names[0]] = img
	r, err := e.is.PullImage(e.ctx, &runtimeapi.PullImageRequest{
		Image: &runtimeapi.ImageSpec{Image: "registry.local:5000/app:v1"},
		Auth:  &runtimeapi.AuthConfig{Auth: base64.StdEncoding.EncodeToString([]byte("joe:secret"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetImageRef() != img.ID {
		t.Errorf("image ref %q, want the image ID %s", r.GetImageRef(), img.ID)
	}
	o := e.store.pulls[0]
	if o.PullPolicy != store.PullUpdate || !o.InsecureHTTP || o.Auth == nil || o.Auth.Username != "joe" || o.Auth.Password != "secret" {
		t.Errorf("pull options %+v (auth %+v)", o, o.Auth)
	}
	// a pull's roll back must spare the images pods use
	pod := e.runPod(t, "web")
	e.createContainer(t, pod, "app")
	inUse, err := o.InUse()
	if err != nil || !inUse[testImage("busybox").ID] {
		t.Errorf("InUse() = %v, %v; want busybox's ID", inUse, err)
	}
	if st, err := e.is.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "registry.local:5000/app:v1"}}); err != nil || st.GetImage().GetId() != img.ID {
		t.Errorf("ImageStatus after the pull: %v, %v", st, err)
	}
}

func TestPullImageErrors(t *testing.T) {
	e := newTestEnv(t)
	_, err := e.is.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{}})
	wantCode(t, "no image", err, codes.InvalidArgument)
	_, err = e.is.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "nothere"}})
	wantCode(t, "image the registry lacks", err, codes.NotFound)
	_, err = e.is.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"},
		Auth: &runtimeapi.AuthConfig{Auth: "%%%"}})
	wantCode(t, "bad auth", err, codes.InvalidArgument)
	if len(e.store.pulls) != 1 {
		t.Errorf("%d pulls reached the store, want only the valid request's", len(e.store.pulls))
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err = e.is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}})
	wantCode(t, "cancelled pull", err, codes.Canceled)
}

// TestPullFreesMemoryAfterDownloads: the heap a pull's download grew is
// returned to the OS after it; a pull that downloads nothing (an image the
// node has, at every container start under the Always policy) forces no GC.
func TestPullFreesMemoryAfterDownloads(t *testing.T) {
	e := newTestEnv(t)
	frees := make(chan struct{}, 10)
	e.svc.freeOSMemory = func() { frees <- struct{}{} }
	img := testImage("registry.local:5000/app:v1")
	e.store.remote[img.Names[0]] = img
	pull := func(alloc int) {
		e.store.mu.Lock()
		e.store.pullAlloc = alloc
		e.store.mu.Unlock()
		if _, err := e.is.PullImage(e.ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: img.Names[0]}}); err != nil {
			t.Fatal(err)
		}
	}
	pull(4 * pullFreeMin)
	select {
	case <-frees:
	case <-time.After(10 * time.Second):
		t.Fatal("no memory returned after a pull that downloaded")
	}
	pull(0)
	select {
	case <-frees:
		t.Error("memory returned after a pull that downloaded nothing")
	case <-time.After(100 * time.Millisecond):
	}
}
