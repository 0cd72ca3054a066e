package kubeletsvc

import (
	"encoding/json"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestImageStatus(t *testing.T) {
	e := newTestEnv(t)
	img := e.haveImage("busybox:1.36")
	r, err := e.is.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "busybox:1.36"}, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetImage().GetId() != img.ID {
		t.Errorf("image %v, want %s", r.GetImage(), img.ID)
	}
	var info map[string]any
	if err := json.Unmarshal([]byte(r.GetInfo()["info"]), &info); err != nil || info["id"] != img.ID {
		t.Errorf("verbose info %v, %v", info, err)
	}
	// api.proto: an image that is not present is a nil image, not an error
	r, err = e.is.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "busybox:1.37"}})
	if err != nil || r.GetImage() != nil {
		t.Errorf("absent image: %v, %v", r.GetImage(), err)
	}
	_, err = e.is.ImageStatus(e.ctx, &runtimeapi.ImageStatusRequest{})
	wantCode(t, "no image", err, codes.InvalidArgument)
}
