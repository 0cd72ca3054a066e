package kubeletsvc

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/buildinfo"
)

func TestVersion(t *testing.T) {
	e := newTestEnv(t)
	r, err := e.rs.Version(e.ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetRuntimeName() != "rkt" || r.GetRuntimeApiVersion() != "v1" || r.GetVersion() != "0.1.0" || r.GetRuntimeVersion() != buildinfo.Version {
		t.Errorf("version %v", r)
	}
}
