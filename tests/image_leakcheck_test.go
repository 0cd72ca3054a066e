package tests

import (
	"strings"
	"testing"

	"github.com/rkt/rkt/tests/testutil"
)

// TestLeakCheckerSeesRunningPod proves the leak checker on a real pod: while
// a detached pod runs, FindLeaks reports its processes, mounts and cgroups;
// once it is stopped and collected, nothing.
func TestLeakCheckerSeesRunningPod(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	ref, _ := testutil.PushBusybox(t, reg, "busybox:leak")
	env.Fetch(ref)
	r := env.Run("run", "--detach", "--net=none", "--stage1-path="+testutil.Stage1Bin(t), ref, "--exec=/bin/sh", "--", "-c", "trap 'exit 0' TERM; sleep 600 & wait")
	if r.Code != 0 {
		if strings.Contains(r.Stderr, "unknown") {
			t.Skipf("rkt run --detach is not available: %s", r.Stderr)
		}
		t.Fatalf("cannot start a pod: %s", r)
	}
	uuid := strings.TrimSpace(r.Stdout)
	env.TrackPod(uuid)

	kinds := map[string]int{}
	leaks := testutil.FindLeaks(env.DataDir, env.PodUUIDs())
	for _, l := range leaks {
		kinds[l.Kind]++
	}
	for _, k := range []string{"process", "mount", "cgroup", "pod"} {
		if kinds[k] == 0 {
			t.Errorf("running pod %s: no %s found by the leak checker: %v", uuid, k, leaks)
		}
	}
	t.Logf("running pod seen as %d leaks: %v", len(leaks), kinds)

	env.RunOK("stop", uuid)
	env.RunOK("gc", "--grace-period=0s")
	if left := testutil.FindLeaks(env.DataDir, env.PodUUIDs()); len(left) != 0 {
		t.Errorf("after stop and gc: %v", left)
	}
}
