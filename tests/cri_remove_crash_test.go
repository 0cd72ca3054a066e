package tests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIRemoveContainerCrash: RemoveContainer returns once the
// container's directory left the pod's apps/ durably, and the pod
// manifest is rewritten after. The service SIGKILLed in between (the pod
// directory is made immutable so that the rewrite cannot come first)
// comes back without the container: not listed, NotFound, removable
// again, its name free for a new container; and nothing is left behind
// (the environment's leak check).
func TestCRIRemoveContainerCrash(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	logDir := podLogDir(t, c)
	_, image := pullTestImage(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pod, first := runPodWithContainer(t, c, "rm-crash", image, logDir)
	pc := podConfig("rm-crash", logDir)
	second := startContainerIn(t, c, pod, pc, containerConfig("second", image, "sleep", "100000"))
	// the first removal as usual (it makes the pod's apps-removed/)
	_, err := c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: first})
	must(t, "RemoveContainer (running)", err)
	_, err = c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: second, Timeout: 10})
	must(t, "StopContainer", err)

	podDir := filepath.Join(env.DataDir, "pods", "run", pod)
	testutil.SetImmutable(t, podDir, true)
	t.Cleanup(func() { testutil.SetImmutable(t, podDir, false) })
	_, err = c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: second})
	must(t, "RemoveContainer (manifest not rewritable)", err)
	svc.Kill()
	testutil.SetImmutable(t, podDir, false)
	b, err := os.ReadFile(schema.PodDir(podDir).Manifest())
	must(t, "read the pod manifest", err)
	var pm schema.PodManifest
	must(t, "parse the pod manifest", json.Unmarshal(b, &pm))
	if len(pm.Apps) != 1 {
		t.Fatalf("the manifest lists %d apps: the test missed the window between the removal and the rewrite", len(pm.Apps))
	}

	svc.Restart()
	l, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: pod}})
	must(t, "ListContainers", err)
	if len(l.Containers) != 0 {
		t.Errorf("containers after the restart: %v", l.Containers)
	}
	if _, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: second}); status.Code(err) != codes.NotFound {
		t.Errorf("ContainerStatus of the removed container: %v, want NotFound", err)
	}
	_, err = c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: second})
	must(t, "RemoveContainer again", err)
	again := startContainerIn(t, c, pod, pc, containerConfig("second", image, "sleep", "100000"))
	l, err = c.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: pod}})
	must(t, "ListContainers", err)
	if len(l.Containers) != 1 || l.Containers[0].Id != again {
		t.Errorf("containers after a new one of the same name: %v", l.Containers)
	}
}

// startContainerIn creates and starts a container in the sandbox pod.
func startContainerIn(t *testing.T, c *criClient, pod string, pc *runtimeapi.PodSandboxConfig, cc *runtimeapi.ContainerConfig) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: cc, SandboxConfig: pc})
	must(t, "CreateContainer "+cc.Metadata.Name, err)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: r.ContainerId})
	must(t, "StartContainer "+cc.Metadata.Name, err)
	return r.ContainerId
}
