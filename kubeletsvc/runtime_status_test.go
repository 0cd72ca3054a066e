package kubeletsvc

import (
	"encoding/json"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestStatus(t *testing.T) {
	e := newTestEnv(t)
	cond := func(r *runtimeapi.StatusResponse, typ string) *runtimeapi.RuntimeCondition {
		for _, c := range r.GetStatus().GetConditions() {
			if c.GetType() == typ {
				return c
			}
		}
		t.Fatalf("no %s condition in %v", typ, r.GetStatus())
		return nil
	}
	r, err := e.rs.Status(e.ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	if !cond(r, runtimeapi.RuntimeReady).GetStatus() || !cond(r, runtimeapi.NetworkReady).GetStatus() {
		t.Errorf("conditions %v, want both true", r.GetStatus().GetConditions())
	}
	if h := r.GetRuntimeHandlers(); len(h) != 1 || !h[0].GetFeatures().GetUserNamespaces() || !h[0].GetFeatures().GetRecursiveReadOnlyMounts() {
		t.Errorf("handlers %v", h)
	}
	var info map[string]any
	if err := json.Unmarshal([]byte(r.GetInfo()["config"]), &info); err != nil {
		t.Fatal(err)
	}
	if info["dataDir"] != "/var/lib/rkt" || info["stateDir"] != "/var/lib/rkt/pods" {
		t.Errorf("verbose config %v", info)
	}
	e.rt.netReady, e.rt.netWhy = false, "no network config in /etc/cni/net.d"
	r, err = e.rs.Status(e.ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(r, runtimeapi.NetworkReady); c.GetStatus() || c.GetReason() != "NetworkPluginNotReady" || c.GetMessage() == "" {
		t.Errorf("network condition %v, want false with the reason", c)
	}
	if !cond(r, runtimeapi.RuntimeReady).GetStatus() {
		t.Error("the runtime is ready without a pod network")
	}
}

func TestUpdateRuntimeConfig(t *testing.T) {
	e := newTestEnv(t)
	req := func(cidr string) *runtimeapi.UpdateRuntimeConfigRequest {
		return &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: cidr}}}
	}
	if _, err := e.rs.UpdateRuntimeConfig(e.ctx, req("10.244.1.0/24")); err != nil {
		t.Fatal(err)
	}
	if e.rt.cidr != "10.244.1.0/24" {
		t.Errorf("pod CIDR %q", e.rt.cidr)
	}
	if _, err := e.rs.UpdateRuntimeConfig(e.ctx, req("")); err != nil || e.rt.cidr != "10.244.1.0/24" {
		t.Errorf("an empty CIDR changed the pod CIDR to %q (%v)", e.rt.cidr, err)
	}
	_, err := e.rs.UpdateRuntimeConfig(e.ctx, req("10.244.1.0"))
	wantCode(t, "a CIDR without a prefix length", err, codes.InvalidArgument)
}
