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

// TestListsBesideUnreadableContainer: a container whose CRI config cannot
// be decoded is left out of lists, as stage0 leaves out a pod it cannot
// read; its siblings and every other container are listed, and the
// sandbox's status and stats are answered. It failed every
// ListContainers of the node (the kubelet's relist: PLEG unhealthy, the
// node NotReady) and every call that reads its sandbox's containers.
func TestListsBesideUnreadableContainer(t *testing.T) {
	e := newTestEnv(t)
	pod, other := e.runPod(t, "web"), e.runPod(t, "other")
	good := e.startContainer(t, pod, "good")
	e.breakConfig(pod, e.startContainer(t, pod, "bad"))
	elsewhere := e.startContainer(t, other, "x")
	ids := func(l []*runtimeapi.Container) (out []string) {
		for _, c := range l {
			out = append(out, c.Id)
		}
		return out
	}
	for _, tc := range []struct {
		what string
		f    *runtimeapi.ContainerFilter
		want []string
	}{
		{"every container", nil, []string{good, elsewhere}},
		{"the sandbox's", &runtimeapi.ContainerFilter{PodSandboxId: pod}, []string{good}},
		{"another sandbox's, by label", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"ctr": "x"}}, []string{elsewhere}},
	} {
		r, err := e.rs.ListContainers(e.ctx, &runtimeapi.ListContainersRequest{Filter: tc.f})
		if err != nil {
			t.Errorf("ListContainers of %s: %v", tc.what, err)
			continue
		}
		if got := ids(r.Containers); !sameIDs(got, tc.want) {
			t.Errorf("ListContainers of %s: %v, want %v", tc.what, got, tc.want)
		}
	}
	st, err := e.rs.PodSandboxStatus(e.ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: pod})
	if err != nil {
		t.Errorf("PodSandboxStatus: %v", err)
	} else if n := len(st.ContainersStatuses); n != 1 || st.ContainersStatuses[0].Id != good {
		t.Errorf("PodSandboxStatus has %d container statuses, want the readable one's", n)
	}
	if _, err := e.rs.ListPodSandboxStats(e.ctx, &runtimeapi.ListPodSandboxStatsRequest{}); err != nil {
		t.Errorf("ListPodSandboxStats: %v", err)
	}
	if _, err := e.rs.ListContainerStats(e.ctx, &runtimeapi.ListContainerStatsRequest{}); err != nil {
		t.Errorf("ListContainerStats: %v", err)
	}
}
