package kubeletsvc

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestListKeptWhileGenerationStays: with a generation from stage0, the
// List* answers are kept (the unfiltered ones sent as encoded once) until
// it changes; then they show the change.
func TestListKeptWhileGenerationStays(t *testing.T) {
	e := newTestEnv(t)
	a := e.runPod(t, "a")
	ca := e.startContainer(t, a, "ca")
	setGen := func(g uint64) {
		e.rt.mu.Lock()
		e.rt.gen = g
		e.rt.mu.Unlock()
	}
	pods := func(f *runtimeapi.PodSandboxFilter) []string {
		t.Helper()
		r, err := e.rs.ListPodSandbox(e.ctx, &runtimeapi.ListPodSandboxRequest{Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range r.GetItems() {
			if s.GetMetadata().GetName() == "" || s.GetCreatedAt() == 0 {
				t.Errorf("item %v lacks its metadata", s)
			}
			ids = append(ids, s.GetId())
		}
		return ids
	}
	ctrs := func() []string {
		t.Helper()
		r, err := e.rs.ListContainers(e.ctx, &runtimeapi.ListContainersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range r.GetContainers() {
			if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || c.GetLabels()["ctr"] != "ca" {
				t.Errorf("container %v: want running, labelled", c)
			}
			ids = append(ids, c.GetId())
		}
		return ids
	}
	setGen(1)
	for i := 0; i < 2; i++ { // built, then sent as kept
		if got := pods(nil); !sameIDs(got, []string{a}) {
			t.Fatalf("pods %v, want [%s]", got, a)
		}
		if got := ctrs(); !sameIDs(got, []string{ca}) {
			t.Fatalf("containers %v, want [%s]", got, ca)
		}
	}
	if s := e.svc.snap.Load(); s == nil || s.sandboxesEnc.Load() == nil || s.containersEnc.Load() == nil {
		t.Fatal("the unfiltered answers were not kept encoded")
	}
	// a change stage0's generation does not report is not seen: the
	// answer is kept, filtered or not
	b := e.runPod(t, "b")
	if got := pods(nil); !sameIDs(got, []string{a}) {
		t.Fatalf("kept answer changed with the generation unchanged: %v", got)
	}
	if got := pods(&runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "b"}}); len(got) != 0 {
		t.Fatalf("kept filtered answer changed with the generation unchanged: %v", got)
	}
	setGen(2)
	if got := pods(nil); !sameIDs(got, []string{a, b}) {
		t.Fatalf("after a new generation: pods %v, want [%s %s]", got, a, b)
	}
	// no generation (0): nothing kept
	setGen(0)
	c := e.runPod(t, "c")
	if got := pods(nil); !sameIDs(got, []string{a, b, c}) {
		t.Fatalf("without a generation: pods %v, want [%s %s %s]", got, a, b, c)
	}
}
