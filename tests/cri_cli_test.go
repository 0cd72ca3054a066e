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

	// The NAME columns show the Kubernetes names: namespace/name of the
	// pod, the container's name.
	if r := env.RunOK("list", "--full", "--no-legend"); !hasRow(r.Stdout, pod, "rkt-test/cli-visible", app) {
		t.Errorf("rkt list does not show CRI pod %s as rkt-test/cli-visible with app %s:\n%s", pod, app, r.Stdout)
	}
	if r := env.RunOK("app", "list", "--no-legend", pod); !hasRow(r.Stdout, app, "sleeper", "running") {
		t.Errorf("rkt app list %s does not show app %s as container sleeper:\n%s", pod, app, r.Stdout)
	}
	if r := env.RunOK("list"); !strings.HasPrefix(r.Stdout, "UUID") || strings.Fields(r.Stdout)[1] != "NAME" {
		t.Errorf("rkt list header has no NAME column after UUID:\n%s", r.Stdout)
	}
	if r := env.RunOK("cat-manifest", pod); !strings.Contains(r.Stdout, `"io.rkt.kubelet-service/name": "cli-visible"`) ||
		!strings.Contains(r.Stdout, `"io.rkt.kubelet-service/namespace": "rkt-test"`) {
		t.Errorf("rkt cat-manifest %s lacks the Kubernetes names:\n%s", pod, r.Stdout)
	}
	if r := env.RunOK("enter", "--tty=false", "--app="+app, pod, "hostname"); strings.TrimSpace(r.Stdout) != "cli-visible" {
		t.Errorf("rkt enter printed %q, want the pod's hostname", r.Stdout)
	}

	// rkt gc (rkt-gc.timer) leaves a stopped sandbox to the kubelet, which
	// keeps it for its containers' statuses and logs until it removes it
	_, err = c.StopPodSandbox(rpcCtx(t), &runtimeapi.StopPodSandboxRequest{PodSandboxId: pod})
	must(t, "StopPodSandbox", err)
	env.RunOK("gc", "--grace-period=0s")
	if _, err := c.ContainerStatus(rpcCtx(t), &runtimeapi.ContainerStatusRequest{ContainerId: ctr}); err != nil {
		t.Errorf("the container of a stopped sandbox after rkt gc: %v", err)
	}
	_, err = c.RemovePodSandbox(rpcCtx(t), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: pod})
	must(t, "RemovePodSandbox", err)
}

// hasRow reports whether a table has a row whose first columns are cols.
func hasRow(table string, cols ...string) bool {
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) < len(cols) {
			continue
		}
		match := true
		for i, c := range cols {
			match = match && f[i] == c
		}
		if match {
			return true
		}
	}
	return false
}
