package tests

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// criClient is a Go CRI client of a criService.
type criClient struct {
	runtimeapi.RuntimeServiceClient
	runtimeapi.ImageServiceClient
	conn *grpc.ClientConn
}

// dialCRI connects to the service's socket; closed at cleanup.
func dialCRI(t testing.TB, s *criService) *criClient {
	t.Helper()
	return dialCRIEndpoint(t, "unix://"+s.Socket)
}

// dialCRIEndpoint connects to a CRI endpoint (unix://...); closed at cleanup.
func dialCRIEndpoint(t testing.TB, endpoint string) *criClient {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("cannot dial %s: %v", endpoint, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &criClient{
		RuntimeServiceClient: runtimeapi.NewRuntimeServiceClient(conn),
		ImageServiceClient:   runtimeapi.NewImageServiceClient(conn),
		conn:                 conn,
	}
}

// rpcCtx bounds one CRI call of a test.
func rpcCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// podConfig returns a sandbox config named name with a log directory.
func podConfig(name, logDir string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "rkt-test", Uid: "uid-" + name, Attempt: 0},
		Hostname:     name,
		LogDirectory: logDir,
		Labels:       map[string]string{"test": "rkt", "pod": name},
		Annotations:  map[string]string{"io.rkt.test/pod": name},
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}
}

// containerConfig returns a container config running cmd in image.
func containerConfig(name, image string, cmd ...string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: name},
		Image:       &runtimeapi.ImageSpec{Image: image},
		Command:     cmd,
		LogPath:     name + ".log",
		Labels:      map[string]string{"container": name},
		Annotations: map[string]string{"io.rkt.test/container": name},
		Linux:       &runtimeapi.LinuxContainerConfig{},
	}
}

// runPodWithContainer starts a sandbox and a running container in it
// (`sleep` forever) and returns their IDs.
func runPodWithContainer(t testing.TB, c *criClient, name, image, logDir string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pc := podConfig(name, logDir)
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	if err != nil {
		t.Fatalf("RunPodSandbox %s: %v", name, err)
	}
	cc, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: rp.PodSandboxId, Config: containerConfig("sleeper", image, "sleep", "100000"), SandboxConfig: pc,
	})
	if err != nil {
		t.Fatalf("CreateContainer in %s: %v", name, err)
	}
	if _, err := c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cc.ContainerId}); err != nil {
		t.Fatalf("StartContainer in %s: %v", name, err)
	}
	return rp.PodSandboxId, cc.ContainerId
}

// removeAllPods stops and removes every sandbox (test cleanup).
func removeAllPods(t testing.TB, c *criClient) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Errorf("cleanup: ListPodSandbox: %v", err)
		return
	}
	for _, p := range l.Items {
		if _, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			t.Errorf("cleanup: StopPodSandbox %s: %v", p.Id, err)
		}
		if _, err := c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			t.Errorf("cleanup: RemovePodSandbox %s: %v", p.Id, err)
		}
	}
}

// podLogDir returns a directory for the logs of pods of c; every pod of c is
// removed at the end of the test, before the directory is.
func podLogDir(t testing.TB, c *criClient) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() { removeAllPods(t, c) })
	return dir
}

// podLogDirOf is podLogDir for the pods of svc, removed through a connection
// made at cleanup (svc may have been restarted by then).
func podLogDirOf(t testing.TB, svc *criService) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() { removeAllPods(t, dialCRI(t, svc)) })
	return dir
}

// pullTestImage pushes busybox to a loopback registry and pulls it through
// the service; it returns the reference and the image ID.
func pullTestImage(t testing.TB, c *criClient) (string, string) {
	t.Helper()
	reg := testutil.StartRegistry(t)
	ref := reg.Push(t, "rkt-test/busybox:1", testutil.Busybox(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatalf("PullImage %s: %v", ref, err)
	}
	return ref, r.ImageRef
}

// must fails the test on err.
func must(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func sleepShort() { time.Sleep(100 * time.Millisecond) }

// statusCode names the gRPC code of err.
func statusCode(err error) string { return status.Code(err).String() }
