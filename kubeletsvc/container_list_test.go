package kubeletsvc

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestListContainers(t *testing.T) {
	e := newTestEnv(t)
	p1, p2 := e.runPod(t, "a"), e.runPod(t, "b")
	created, running := e.createContainer(t, p1, "created"), e.startContainer(t, p1, "running")
	other := e.startContainer(t, p2, "other")
	state := func(s runtimeapi.ContainerState) *runtimeapi.ContainerStateValue {
		return &runtimeapi.ContainerStateValue{State: s}
	}
	for _, tc := range []struct {
		name string
		f    *runtimeapi.ContainerFilter
		want []string
	}{
		{"all", nil, []string{created, running, other}},
		{"by sandbox", &runtimeapi.ContainerFilter{PodSandboxId: p1}, []string{created, running}},
		{"by sandbox prefix", &runtimeapi.ContainerFilter{PodSandboxId: p2[:8]}, []string{other}},
		{"unknown sandbox", &runtimeapi.ContainerFilter{PodSandboxId: "0123abcd"}, nil},
		{"by ID prefix", &runtimeapi.ContainerFilter{Id: running[:40]}, []string{running}},
		{"running", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_RUNNING)}, []string{running, other}},
		{"created in a", &runtimeapi.ContainerFilter{PodSandboxId: p1, State: state(runtimeapi.ContainerState_CONTAINER_CREATED)}, []string{created}},
		{"by label", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"ctr": "other"}}, []string{other}},
		{"unknown label", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"ctr": "x"}}, nil},
	} {
		r, err := e.rs.ListContainers(e.ctx, &runtimeapi.ListContainersRequest{Filter: tc.f})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, c := range r.GetContainers() {
			got = append(got, c.GetId())
			if owner, _ := podOfContainerID(c.GetId()); c.GetPodSandboxId() != owner || c.GetImageRef() == "" || c.GetMetadata().GetName() == "" {
				t.Errorf("%s: item %v", tc.name, c)
			}
		}
		if !sameIDs(got, tc.want) {
			t.Errorf("%s: listed %v, want %v", tc.name, got, tc.want)
		}
	}
}
