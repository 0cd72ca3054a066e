package kubeletsvc

import (
	"context"
	"encoding/json"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

func TestPodSandboxStatus(t *testing.T) {
	e := newTestEnv(t)
	id := e.runPod(t, "web")
	ctr := e.createContainer(t, id, "app")
	r, err := e.rs.PodSandboxStatus(e.ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id[:8], Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	st, want := r.GetStatus(), sandboxConfig("web")
	if st.GetId() != id || !proto.Equal(st.GetMetadata(), want.GetMetadata()) || st.GetLabels()["app"] != "web" ||
		st.GetAnnotations()["note"] != "x" || st.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY || st.GetCreatedAt() == 0 {
		t.Errorf("status %v", st)
	}
	if st.GetNetwork().GetIp() != "10.88.0.2" {
		t.Errorf("IP %q, want the pod's address without its prefix length", st.GetNetwork().GetIp())
	}
	if cs := r.GetContainersStatuses(); len(cs) != 1 || cs[0].GetId() != ctr {
		t.Errorf("container statuses %v, want %s", cs, ctr)
	}
	var info map[string]any
	if err := json.Unmarshal([]byte(r.GetInfo()["info"]), &info); err != nil {
		t.Fatalf("verbose info: %v", err)
	}
	if info["pid"] == nil || info["state"] != string(stage0.PodRunning) {
		t.Errorf("verbose info %v", info)
	}
}

func TestPodSandboxStatusNotFound(t *testing.T) {
	e := newTestEnv(t)
	_, err := e.rs.PodSandboxStatus(e.ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "0123abcd"})
	wantCode(t, "unknown sandbox", err, codes.NotFound)
	_, err = e.rs.PodSandboxStatus(e.ctx, &runtimeapi.PodSandboxStatusRequest{})
	wantCode(t, "no ID", err, codes.InvalidArgument)
	// a pod made by the CLI is no sandbox
	cli, err := e.rt.Sandbox(context.Background(), stage0.PodOptions{UUID: "fedcba98-0000-4000-8000-000000000000"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.rs.PodSandboxStatus(e.ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: cli})
	wantCode(t, "a pod without CRI metadata", err, codes.NotFound)
	// a prefix of two sandboxes' IDs
	for _, u := range []string{"aaaa0000-0000-4000-8000-000000000000", "aaaa1111-0000-4000-8000-000000000000"} {
		annos, err := sandboxAnnotations(sandboxConfig(u[:8]), "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.rt.Sandbox(context.Background(), stage0.PodOptions{UUID: u, Annotations: annos}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = e.rs.PodSandboxStatus(e.ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "aaaa"})
	wantCode(t, "ambiguous prefix", err, codes.InvalidArgument)
	if _, err = e.rs.PodSandboxStatus(e.ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "aaaa1"}); err != nil {
		t.Errorf("unique prefix: %v", err)
	}
}
