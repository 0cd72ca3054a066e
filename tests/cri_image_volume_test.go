package tests

import (
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIImageVolume: a container's image volumes (a two-layer image,
// whole and by sub path) are its files, read-only; the image counts as in
// use while a container using it exists (RemoveImage is refused and the
// files stay), a sub path the image lacks is refused and leaves nothing,
// and once the containers are gone (removed, or with their pod) the image
// can be removed, with no mount left.
func TestCRIImageVolume(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	ctx := rpcCtx(t)
	logDir := podLogDir(t, c)
	_, busybox := pullTestImage(t, c)
	reg := testutil.StartRegistry(t)
	dataRef := reg.Push(t, "data:1", testutil.Image(t, testutil.ImageConfig{},
		testutil.Layer(t, testutil.Dir("content/"), testutil.File("content/hello.txt", "image-volume-data\n")),
		testutil.Layer(t, testutil.File("content/second.txt", "second-layer\n"))))
	pr, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: dataRef}})
	must(t, "PullImage", err)
	data := pr.ImageRef

	pc := podConfig("imagevol", logDir)
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	create := func(name, sub string) (string, error) {
		cfg := containerConfig(name, busybox, "sleep", "100000")
		cfg.Mounts = []*runtimeapi.Mount{
			{ContainerPath: "/iv", Readonly: true, Image: &runtimeapi.ImageSpec{Image: dataRef}},
			{ContainerPath: "/sub", Readonly: true, Image: &runtimeapi.ImageSpec{Image: dataRef}, ImageSubPath: sub},
		}
		r, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, Config: cfg, SandboxConfig: pc})
		return r.GetContainerId(), err
	}

	if _, err := create("nosub", "nothere"); statusCode(err) != "InvalidArgument" {
		t.Fatalf("CreateContainer with a sub path the image lacks: %v, want InvalidArgument", err)
	}
	id, err := create("reader", "content")
	must(t, "CreateContainer", err)
	l, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: rp.PodSandboxId}})
	must(t, "ListContainers", err)
	if len(l.Containers) != 1 {
		t.Fatalf("containers after a refused and a created one: %v", l.Containers)
	}
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	must(t, "StartContainer", err)
	read := func() string {
		t.Helper()
		r, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Timeout: 30, Cmd: []string{"sh", "-c",
			"cat /iv/content/hello.txt /sub/second.txt; touch /iv/x /sub/x 2>/dev/null && echo writable || echo read-only"}})
		must(t, "ExecSync", err)
		return string(r.Stdout)
	}
	const want = "image-volume-data\nsecond-layer\nread-only\n"
	if got := read(); got != want {
		t.Fatalf("in the container: %q, want %q", got, want)
	}
	st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	must(t, "ContainerStatus", err)
	for _, m := range st.Status.Mounts {
		if strings.HasPrefix(m.ContainerPath, "/iv") || m.ContainerPath == "/sub" {
			if m.GetImage().GetImageRef() != data {
				t.Errorf("mount %s: image_ref %q, want %s", m.ContainerPath, m.GetImage().GetImageRef(), data)
			}
		}
	}

	_, err = c.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: data}})
	if statusCode(err) != "FailedPrecondition" {
		t.Errorf("RemoveImage of an image volume's image in use: %v, want FailedPrecondition", err)
	}
	if got := read(); got != want {
		t.Errorf("after RemoveImage, in the container: %q, want %q", got, want)
	}

	// a second container keeps the image in use after the first is
	// removed; removing the pod (not the container) releases it
	keeper, err := create("keeper", "")
	must(t, "CreateContainer", err)
	_, err = c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1})
	must(t, "StopContainer", err)
	_, err = c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	must(t, "RemoveContainer", err)
	_, err = c.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: data}})
	if statusCode(err) != "FailedPrecondition" {
		t.Errorf("RemoveImage while container %s uses it: %v, want FailedPrecondition", keeper, err)
	}
	_, err = c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: rp.PodSandboxId})
	must(t, "StopPodSandbox", err)
	_, err = c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: rp.PodSandboxId})
	must(t, "RemovePodSandbox", err)
	_, err = c.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: data}})
	must(t, "RemoveImage after the pod", err)
}
