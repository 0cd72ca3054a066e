package tests

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIImages: PullImage with the kubelet's credentials (refused
// without), by tag and by digest to the same image ID; ListImages with a
// filter; verbose ImageStatus; RemoveImage by one name removes every tag;
// ImageFsInfo reports the store.
func TestCRIImages(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	ctx := rpcCtx(t)
	reg := testutil.StartRegistry(t, testutil.WithBasicAuth("kube", "s3cret"))
	img := testutil.Busybox(t)
	ref := reg.Push(t, "private/busybox:1", img)
	reg.Push(t, "private/busybox:2", img)
	id := testutil.ImageID(t, img)
	digestRef := reg.Ref("private/busybox@" + testutil.ManifestDigest(t, img))

	if _, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err == nil {
		t.Fatal("PullImage from a registry needing auth succeeded without credentials")
	}
	auth := &runtimeapi.AuthConfig{Username: "kube", Password: "s3cret"}
	r1, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}, Auth: auth})
	must(t, "PullImage with auth", err)
	r2, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: reg.Ref("private/busybox:2")},
		Auth: &runtimeapi.AuthConfig{Auth: "a3ViZTpzM2NyZXQ="}}) // kube:s3cret
	must(t, "PullImage with base64 auth", err)
	r3, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: digestRef}, Auth: auth})
	must(t, "PullImage by digest", err)
	if r1.ImageRef != id || r2.ImageRef != id || r3.ImageRef != id {
		t.Fatalf("image refs %s %s %s, want %s for all", r1.ImageRef, r2.ImageRef, r3.ImageRef, id)
	}

	l, err := c.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: ref}}})
	must(t, "ListImages", err)
	if len(l.Images) != 1 || l.Images[0].Id != id || len(l.Images[0].RepoTags) != 2 || len(l.Images[0].RepoDigests) == 0 {
		t.Fatalf("ListImages filtered: %v", l.Images)
	}
	st, err := c.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: id[len("sha256:"):][:12]}, Verbose: true})
	must(t, "ImageStatus", err)
	if st.Image.GetId() != id || st.Image.Size == 0 || st.Info["info"] == "" {
		t.Fatalf("ImageStatus by ID prefix: %v %v", st.Image, st.Info)
	}
	fs, err := c.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	must(t, "ImageFsInfo", err)
	if len(fs.ImageFilesystems) != 1 || fs.ImageFilesystems[0].UsedBytes.GetValue() < st.Image.Size ||
		fs.ImageFilesystems[0].InodesUsed.GetValue() == 0 || fs.ImageFilesystems[0].FsId.GetMountpoint() == "" {
		t.Fatalf("ImageFsInfo: %v (image size %d)", fs.ImageFilesystems, st.Image.Size)
	}

	_, err = c.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: reg.Ref("private/busybox:2")}})
	must(t, "RemoveImage", err)
	for _, r := range []string{ref, reg.Ref("private/busybox:2"), digestRef, id} {
		st, err := c.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: r}})
		if err != nil || st.Image != nil {
			t.Errorf("after RemoveImage, ImageStatus(%s) = %v, %v; want nil", r, st.GetImage(), err)
		}
	}
	all, err := c.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	must(t, "ListImages", err)
	if len(all.Images) != 0 {
		t.Errorf("images left after RemoveImage: %v", all.Images)
	}
}
