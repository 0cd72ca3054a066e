package kubeletsvc

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

// An image volume is the image's layers (or their sub path) mounted
// read-only: one layer bind-mounted, several as a read-only overlay, top
// layer first.
func TestImageVolume(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	data := e.haveImage("data:v1")
	lower, upper := t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(lower, "models"), filepath.Join(upper, "models"), filepath.Join(upper, "only-top")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.store.layers[data.ID] = []string{lower, upper}
	create := func(name, sub string) (*runtimeapi.CreateContainerResponse, error) {
		cfg := containerConfig(name, "busybox")
		e.haveImage("busybox")
		cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/models", Readonly: true, Image: &runtimeapi.ImageSpec{Image: "data:v1"}, ImageSubPath: sub}}
		return e.rs.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: cfg})
	}
	for _, tc := range []struct {
		name, sub string
		want      func(m stage0.Mount) bool
	}{
		{"two-layers", "models", func(m stage0.Mount) bool {
			return m.Type == "overlay" && len(m.Options) == 1 &&
				m.Options[0] == "lowerdir="+filepath.Join(upper, "models")+":"+filepath.Join(lower, "models")
		}},
		{"one-layer", "only-top", func(m stage0.Mount) bool { return m.Type == "" && m.Source == filepath.Join(upper, "only-top") }},
	} {
		r, err := create(tc.name, tc.sub)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		o := e.rt.appOpts[appKey(pod, tc.name+"-0")]
		m := o.Mounts[0]
		if !m.ReadOnly || m.Destination != "/models" || !tc.want(m) {
			t.Errorf("%s: mount %+v", tc.name, m)
		}
		st, err := e.rs.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: r.GetContainerId()})
		if err != nil {
			t.Fatal(err)
		}
		if ref := st.GetStatus().GetMounts()[0].GetImage().GetImageRef(); ref != data.ID {
			t.Errorf("%s: mount's image_ref %q, want %s", tc.name, ref, data.ID)
		}
	}
	_, err := create("missing", "nothere")
	wantCode(t, "a sub path the image lacks", err, codes.InvalidArgument)
}
