package tests

import (
	"strings"
	"testing"

	"github.com/rkt/rkt/tests/testutil"
)

// TestImageRmInUseByPod: a real pod's image cannot be removed or collected
// while the pod exists; after the pod is gone, it can.
func TestImageRmInUseByPod(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	ref, id := testutil.PushBusybox(t, reg, "busybox:inuse")
	env.Fetch(ref)
	r := env.Run("run", "--detach", "--net=none", "--stage1-path="+testutil.Stage1Bin(t), ref,
		"--exec=/bin/sh", "--", "-c", "trap 'exit 0' TERM; sleep 600 & wait")
	if r.Code != 0 {
		t.Fatalf("cannot start a pod: %s", r)
	}
	uuid := strings.TrimSpace(r.Stdout)
	env.TrackPod(uuid)
	if info := env.FindImage(id); info == nil || !info.LastUsedAt.After(info.ImportedAt) {
		t.Errorf("running a pod did not update the image's last use: %+v", info)
	}

	r = env.RunFail("image", "rm", id)
	if !strings.Contains(r.Stderr, "in use") {
		t.Errorf("refusal does not say the image is in use: %s", r.Stderr)
	}
	env.RunOK("image", "gc", "--grace-period=0s")
	if env.FindImage(id) == nil {
		t.Fatalf("image gc removed the image of a running pod")
	}
	// The pod still runs from its layers.
	if out := env.RunOK("status", uuid).Stdout; !strings.Contains(out, "running") {
		t.Errorf("pod not running after image gc:\n%s", out)
	}

	env.RunOK("stop", uuid)
	env.RunOK("gc", "--grace-period=0s")
	env.RunOK("image", "rm", id)
	if env.FindImage(id) != nil {
		t.Errorf("image still listed after the pod was collected")
	}
}
