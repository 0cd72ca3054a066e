package kubeletsvc

import (
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/store"
)

func TestListImages(t *testing.T) {
	e := newTestEnv(t)
	a, b := e.haveImage("busybox"), e.haveImage("quay.io/app:v2")
	b.Config = &v1.ConfigFile{}
	b.Config.Config.User = "1000:1000"
	r, err := e.is.ListImages(e.ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.GetImages()); n != 2 {
		t.Fatalf("%d images, want 2", n)
	}
	for i, want := range []*store.Image{a, b} {
		got := r.GetImages()[i]
		if got.GetId() != want.ID || got.GetRepoTags()[0] != want.Names[0] || got.GetRepoDigests()[0] != want.RepoDigests[0] ||
			got.GetSize() != uint64(want.Size) || got.GetSpec().GetImage() != want.ID {
			t.Errorf("image %v, want %+v", got, want)
		}
	}
	if u := r.GetImages()[1].GetUid(); u == nil || u.GetValue() != 1000 {
		t.Errorf("uid %v, want 1000 from USER 1000:1000", u)
	}
	for ref, n := range map[string]int{"quay.io/app:v2": 1, a.ID: 1, "nginx": 0, "Not A Ref": 0} {
		r, err := e.is.ListImages(e.ctx, &runtimeapi.ListImagesRequest{Filter: &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: ref}}})
		if err != nil {
			t.Errorf("filter %q: %v", ref, err)
		} else if len(r.GetImages()) != n {
			t.Errorf("filter %q: %d images, want %d", ref, len(r.GetImages()), n)
		}
	}
}
