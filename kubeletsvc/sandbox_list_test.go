package kubeletsvc

import (
	"context"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

func TestListPodSandbox(t *testing.T) {
	e := newTestEnv(t)
	a, b, c := e.runPod(t, "a"), e.runPod(t, "b"), e.runPod(t, "c")
	if _, err := e.rs.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: b}); err != nil {
		t.Fatal(err)
	}
	// pods of the CLI are not listed
	if _, err := e.rt.Sandbox(context.Background(), stage0.PodOptions{UUID: "fedcba98-0000-4000-8000-000000000000"}); err != nil {
		t.Fatal(err)
	}
	ready := runtimeapi.PodSandboxState_SANDBOX_READY
	for _, tc := range []struct {
		name string
		f    *runtimeapi.PodSandboxFilter
		want []string
	}{
		{"all", nil, []string{a, b, c}},
		{"by ID prefix", &runtimeapi.PodSandboxFilter{Id: c[:13]}, []string{c}},
		{"ready", &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: ready}}, []string{a, c}},
		{"not ready", &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}}, []string{b}},
		{"by label", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "b"}}, []string{b}},
		{"label and state", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "b"}, State: &runtimeapi.PodSandboxStateValue{State: ready}}, nil},
		{"unknown label", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"tier": "x"}}, nil},
	} {
		r, err := e.rs.ListPodSandbox(e.ctx, &runtimeapi.ListPodSandboxRequest{Filter: tc.f})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, s := range r.GetItems() {
			got = append(got, s.GetId())
			if s.GetMetadata().GetName() == "" || s.GetLabels()["app"] != s.GetMetadata().GetName() || s.GetCreatedAt() == 0 {
				t.Errorf("%s: item %v lacks its metadata", tc.name, s)
			}
		}
		if !sameIDs(got, tc.want) {
			t.Errorf("%s: listed %v, want %v", tc.name, got, tc.want)
		}
	}
}
