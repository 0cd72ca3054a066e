package kubeletsvc

import (
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// An image volume reaches stage0 (which mounts it) as a read-only mount of
// the image by ID, with its sub path cleaned; the container's status names
// the image by ID; an image not in the store is NotFound.
func TestImageVolume(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	data := e.haveImage("data:v1")
	e.haveImage("busybox")
	create := func(name, image, sub string) (*runtimeapi.CreateContainerResponse, error) {
		cfg := containerConfig(name, "busybox")
		cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/models", Readonly: true, Image: &runtimeapi.ImageSpec{Image: image}, ImageSubPath: sub}}
		return e.rs.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: cfg})
	}
	for _, tc := range []struct{ name, sub, wantSub string }{
		{"whole", "", ""},
		{"sub", "models/./v2/", "/models/v2"},
		{"dots-in-names", "a..b/...", "/a..b/..."},
	} {
		r, err := create(tc.name, "data:v1", tc.sub)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		m := e.rt.appOpts[appKey(pod, tc.name+"-0")].Mounts[0]
		if m.Image != data.ID || m.SubPath != tc.wantSub || !m.ReadOnly || m.Destination != "/models" || m.Source != "" {
			t.Errorf("%s: mount %+v, want image %s, sub path %q, read-only", tc.name, m, data.ID, tc.wantSub)
		}
		st, err := e.rs.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: r.GetContainerId()})
		if err != nil {
			t.Fatal(err)
		}
		if ref := st.GetStatus().GetMounts()[0].GetImage().GetImageRef(); ref != data.ID {
			t.Errorf("%s: mount's image_ref %q, want %s", tc.name, ref, data.ID)
		}
	}
	_, err := create("missing", "data:v2", "")
	wantCode(t, "an image volume of an image not in the store", err, codes.NotFound)
	// as Kubernetes validates subPath: relative, no ".." component
	for _, sub := range []string{"../etc", "a/../b", "a/..", "/models", ".", "a\x00b"} {
		_, err = create("bad", "data:v1", sub)
		wantCode(t, fmt.Sprintf("sub path %q", sub), err, codes.InvalidArgument)
	}
}
