package tests

import (
	"testing"

	"github.com/rkt/rkt/tests/testutil"
)

// TestFetchPullPolicy checks never/new/update against a registry whose tag
// moves, counting the requests rkt makes.
func TestFetchPullPolicy(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	v1img := testutil.BusyboxWith(t, testutil.ImageConfig{Labels: map[string]string{"v": "1"}})
	v2img := testutil.BusyboxWith(t, testutil.ImageConfig{Labels: map[string]string{"v": "2"}})
	id1, id2 := testutil.ImageID(t, v1img), testutil.ImageID(t, v2img)
	ref := reg.Push(t, "app:latest", v1img)

	// never: not in the store -> refused without asking the registry.
	reg.ResetRequests()
	env.RunFail("fetch", "--no-progress", "--pull-policy=never", ref)
	if n := len(reg.Requests()); n != 0 {
		t.Errorf("--pull-policy=never contacted the registry: %v", reg.Requests())
	}
	if got := env.Fetch(ref); got != id1 { // default policy: new
		t.Fatalf("first fetch printed %s, want %s", got, id1)
	}

	reg.Push(t, "app:latest", v2img) // the tag moves
	reg.ResetRequests()
	if got := env.Fetch(ref, "--pull-policy=new"); got != id1 {
		t.Errorf("--pull-policy=new printed %s, want the stored %s", got, id1)
	}
	if got := env.Fetch(ref, "--pull-policy=never"); got != id1 {
		t.Errorf("--pull-policy=never printed %s, want the stored %s", got, id1)
	}
	if n := len(reg.Requests()); n != 0 {
		t.Errorf("new/never with the image present contacted the registry: %v", reg.Requests())
	}

	if got := env.Fetch(ref, "--pull-policy=update"); got != id2 {
		t.Fatalf("--pull-policy=update printed %s, want the new %s", got, id2)
	}
	if reg.CountRequests("/manifests/") == 0 {
		t.Errorf("update did not ask the registry")
	}
	// The tag now names the new image only; the old one is still stored.
	if info := env.FindImage(id1); info == nil {
		t.Errorf("old image vanished after update")
	}
	if got := env.Fetch(ref, "--pull-policy=never"); got != id2 {
		t.Errorf("after update the tag resolves to %s, want %s", got, id2)
	}

	// update with nothing new: asks for the manifest, fetches no blob.
	reg.ResetRequests()
	if got := env.Fetch(ref, "--pull-policy=update"); got != id2 {
		t.Errorf("second update printed %s, want %s", got, id2)
	}
	if n := reg.CountRequests("GET /v2/app/blobs/"); n != 0 {
		t.Errorf("update of an unchanged image downloaded %d blobs", n)
	}

	env.RunFail("fetch", "--no-progress", "--pull-policy=sometimes", ref)
}
