package tests

import (
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIPodsInCLI: pods and containers made through the CRI are rkt pods
// and apps: `rkt list`, `rkt app list` and `rkt status` see them (with the
// Kubernetes metadata in their annotations) and `rkt enter` runs in them.
func TestCRIPodsInCLI(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	t.Cleanup(func() { removeAllPods(t, c) })
	pod, ctr := runPodWithContainer(t, c, "cli-visible", imgID, "")
	st, err := c.ContainerStatus(rpcCtx(t), &runtimeapi.ContainerStatusRequest{ContainerId: ctr, Verbose: true})
	must(t, "ContainerStatus", err)
	app := "sleeper-0" // appName of the CRI name "sleeper", attempt 0
	if !strings.Contains(st.Info["info"], `"app":"`+app+`"`) {
		t.Fatalf("container %s is not app %s: %s", ctr, app, st.Info["info"])
	}

	if r := env.RunOK("list", "--full", "--no-legend"); !strings.Contains(r.Stdout, pod) {
		t.Errorf("rkt list does not show CRI pod %s:\n%s", pod, r.Stdout)
	}
	if r := env.RunOK("app", "list", pod); !strings.Contains(r.Stdout, app) {
		t.Errorf("rkt app list %s does not show app %s:\n%s", pod, app, r.Stdout)
	}
	if r := env.RunOK("cat-manifest", pod); !strings.Contains(r.Stdout, `"io.rkt.kubelet-service/name": "cli-visible"`) ||
		!strings.Contains(r.Stdout, `"io.rkt.kubelet-service/namespace": "rkt-test"`) {
		t.Errorf("rkt cat-manifest %s lacks the Kubernetes names:\n%s", pod, r.Stdout)
	}
	if r := env.RunOK("enter", "--tty=false", "--app="+app, pod, "hostname"); strings.TrimSpace(r.Stdout) != "cli-visible" {
		t.Errorf("rkt enter printed %q, want the pod's hostname", r.Stdout)
	}
}
