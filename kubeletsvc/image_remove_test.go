package kubeletsvc

import (
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestRemoveImage(t *testing.T) {
	e := newTestEnv(t)
	e.haveImage("nginx")
	e.createContainer(t, e.runPod(t, "web"), "app") // uses busybox
	spec := func(ref string) *runtimeapi.ImageSpec { return &runtimeapi.ImageSpec{Image: ref} }
	if _, err := e.is.RemoveImage(e.ctx, &runtimeapi.RemoveImageRequest{Image: spec("nginx")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.ResolveImage("nginx"); err == nil {
		t.Error("nginx is still stored")
	}
	if _, err := e.is.RemoveImage(e.ctx, &runtimeapi.RemoveImageRequest{Image: spec("nginx")}); err != nil {
		t.Errorf("removing it again: %v", err)
	}
	_, err := e.is.RemoveImage(e.ctx, &runtimeapi.RemoveImageRequest{Image: spec("busybox")})
	wantCode(t, "removing an image a container uses", err, codes.FailedPrecondition)
	_, err = e.is.RemoveImage(e.ctx, &runtimeapi.RemoveImageRequest{Image: spec("")})
	wantCode(t, "no image", err, codes.InvalidArgument)
}

func TestImageFsInfo(t *testing.T) {
	e := newTestEnv(t)
	e.store.usage.Bytes, e.store.usage.Inodes, e.store.usage.Mountpoint = 5<<20, 42, "/var/lib/rkt"
	r, err := e.is.ImageFsInfo(e.ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	fs := r.GetImageFilesystems()
	if len(fs) != 1 || fs[0].GetUsedBytes().GetValue() != 5<<20 || fs[0].GetInodesUsed().GetValue() != 42 ||
		fs[0].GetFsId().GetMountpoint() != "/var/lib/rkt" || fs[0].GetTimestamp() == 0 {
		t.Errorf("image filesystems %v", fs)
	}
}
