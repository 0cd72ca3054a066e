package tests

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIInvalidInput sends empty and malformed requests to every RPC: each
// gets an error code (never Internal, which a panic would give) or success,
// and the service keeps answering.
func TestCRIInvalidInput(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	ctx := rpcCtx(t)
	t.Cleanup(func() { removeAllPods(t, c) })
	bad := "not-an-id"
	calls := map[string]func() error{
		"RunPodSandbox": func() error { _, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{}); return err },
		"RunPodSandbox handler": func() error {
			_, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: podConfig("h", ""), RuntimeHandler: "kata"})
			return err
		},
		"StopPodSandbox":   func() error { _, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{}); return err },
		"RemovePodSandbox": func() error { _, err := c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{}); return err },
		"PodSandboxStatus": func() error { _, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{}); return err },
		"ListPodSandbox": func() error {
			_, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{Id: bad, LabelSelector: map[string]string{"": ""}}})
			return err
		},
		"CreateContainer": func() error { _, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{}); return err },
		"CreateContainer2": func() error {
			_, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: bad, Config: containerConfig("x", "busybox")})
			return err
		},
		"StartContainer": func() error {
			_, err := c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: bad})
			return err
		},
		"StopContainer": func() error {
			_, err := c.StopContainer(ctx, &runtimeapi.StopContainerRequest{Timeout: -5})
			return err
		},
		"RemoveContainer": func() error { _, err := c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{}); return err },
		"ListContainers": func() error {
			_, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: bad}})
			return err
		},
		"ContainerStatus": func() error { _, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{}); return err },
		"UpdateContainerResources": func() error {
			_, err := c.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: bad})
			return err
		},
		"ReopenContainerLog": func() error { _, err := c.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{}); return err },
		"ExecSync":           func() error { _, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: bad}); return err },
		"Exec":               func() error { _, err := c.Exec(ctx, &runtimeapi.ExecRequest{}); return err },
		"Attach":             func() error { _, err := c.Attach(ctx, &runtimeapi.AttachRequest{}); return err },
		"PortForward":        func() error { _, err := c.PortForward(ctx, &runtimeapi.PortForwardRequest{}); return err },
		"ContainerStats":     func() error { _, err := c.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{}); return err },
		"ListContainerStats": func() error { _, err := c.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{}); return err },
		"PodSandboxStats":    func() error { _, err := c.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{}); return err },
		"ListPodSandboxStats": func() error {
			_, err := c.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{})
			return err
		},
		"UpdateRuntimeConfig": func() error {
			_, err := c.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: &runtimeapi.RuntimeConfig{
				NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: "garbage"}}})
			return err
		},
		"UpdatePodSandboxResources": func() error {
			_, err := c.UpdatePodSandboxResources(ctx, &runtimeapi.UpdatePodSandboxResourcesRequest{})
			return err
		},
		"Status":        func() error { _, err := c.Status(ctx, &runtimeapi.StatusRequest{Verbose: true}); return err },
		"RuntimeConfig": func() error { _, err := c.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{}); return err },
		"ListMetricDescriptors": func() error {
			_, err := c.ListMetricDescriptors(ctx, &runtimeapi.ListMetricDescriptorsRequest{})
			return err
		},
		"ListPodSandboxMetrics": func() error {
			_, err := c.ListPodSandboxMetrics(ctx, &runtimeapi.ListPodSandboxMetricsRequest{})
			return err
		},
		"PullImage": func() error { _, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{}); return err },
		"PullImage bad ref": func() error {
			_, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "UPPER/Case::bad"}})
			return err
		},
		"ImageStatus": func() error { _, err := c.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{}); return err },
		"ListImages": func() error {
			_, err := c.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: "::"}}})
			return err
		},
		"RemoveImage": func() error { _, err := c.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{}); return err },
		"ImageFsInfo": func() error { _, err := c.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{}); return err },
	}
	for name, call := range calls {
		err := call()
		if code := status.Code(err); code == codes.Internal || code == codes.Unavailable {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, name := range []string{"RunPodSandbox", "CreateContainer", "ContainerStatus", "PodSandboxStatus", "PullImage", "UpdateRuntimeConfig"} {
		if code := status.Code(calls[name]()); code != codes.InvalidArgument {
			t.Errorf("%s of an empty or malformed request: code %v, want InvalidArgument", name, code)
		}
	}
	if _, err := c.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		t.Fatalf("the service stopped answering: %v", err)
	}
}

// TestCRIRuntimeHandlers: --runtime-handler names extra handlers (as a
// RuntimeClass's) that run like the default one; others are refused.
func TestCRIRuntimeHandlers(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env, "--runtime-handler=test-handler")
	c := dialCRI(t, svc)
	ctx := rpcCtx(t)
	t.Cleanup(func() { removeAllPods(t, c) })
	st, err := c.Status(ctx, &runtimeapi.StatusRequest{})
	must(t, "Status", err)
	var names []string
	for _, h := range st.RuntimeHandlers {
		names = append(names, h.Name)
	}
	if len(names) != 2 || names[0] != "" || names[1] != "test-handler" {
		t.Errorf("runtime handlers %q, want the default and test-handler", names)
	}
	r, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: podConfig("handler", ""), RuntimeHandler: "test-handler"})
	must(t, "RunPodSandbox with test-handler", err)
	ps, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: r.PodSandboxId})
	must(t, "PodSandboxStatus", err)
	if ps.Status.RuntimeHandler != "test-handler" || ps.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("sandbox handler %q state %s, want test-handler and ready", ps.Status.RuntimeHandler, ps.Status.State)
	}
	_, err = c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: podConfig("kata", ""), RuntimeHandler: "kata"})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("RunPodSandbox with an unknown handler: %v, want InvalidArgument", err)
	}
}
