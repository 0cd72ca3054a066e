package tests

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRISocketPermissions checks the socket's mode and owner, and that
// SO_PEERCRED refuses a peer that is neither root nor in the socket group
// (even when the file mode would let it connect) with PermissionDenied.
func TestCRISocketPermissions(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	fi, err := os.Stat(svc.Socket)
	must(t, "stat socket", err)
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != 0o660 || st.Uid != 0 || st.Gid != 0 {
		t.Fatalf("socket %s: mode %v uid %d gid %d, want 0660 root:root (--socket-group=root)", svc.Socket, fi.Mode().Perm(), st.Uid, st.Gid)
	}
	c := dialCRI(t, svc)
	if _, err := c.Version(rpcCtx(t), &runtimeapi.VersionRequest{}); err != nil {
		t.Fatalf("root's Version call: %v", err)
	}
	// Open the file mode (and the way to it) so that only the
	// peer-credential check stands.
	must(t, "chmod socket", os.Chmod(svc.Socket, 0o666))
	must(t, "chmod test dir", os.Chmod(env.Root, 0o711))
	crictl := toolPath(t, "crictl")
	tests := []struct {
		name    string
		setpriv []string
		ok      bool
	}{
		{"nobody", []string{"--reuid=65534", "--regid=65534", "--clear-groups"}, false},
		{"nobody in the socket group", []string{"--reuid=65534", "--regid=65534", "--groups=0"}, true},
		{"nobody with the socket group as primary", []string{"--reuid=65534", "--regid=0", "--clear-groups"}, true},
	}
	for _, tc := range tests {
		args := append(tc.setpriv, crictl, "--runtime-endpoint", svc.Endpoint, "--timeout", "10s", "version")
		cmd := exec.Command("setpriv", args...)
		cmd.Env = append(os.Environ(), "CRI_CONFIG_FILE=/dev/null", "HOME=/tmp")
		out, err := cmd.CombinedOutput()
		if err != nil && strings.Contains(string(out), "permission denied") && !strings.Contains(string(out), "PermissionDenied") {
			t.Fatalf("%s: crictl cannot reach the socket at all: %s", tc.name, out)
		}
		if tc.ok && err != nil {
			t.Errorf("%s: crictl version failed: %v\n%s", tc.name, err, out)
		}
		if !tc.ok && (err == nil || !strings.Contains(string(out), "PermissionDenied")) {
			t.Errorf("%s: crictl version: %v, want PermissionDenied:\n%s", tc.name, err, out)
		}
	}
}

// TestCRIErrorCodes checks the gRPC codes of the api.proto contracts:
// NotFound, InvalidArgument, AlreadyExists, DeadlineExceeded, idempotent
// stops and removes, ImageStatus of a missing image, and exit codes.
func TestCRIErrorCodes(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	ref, imgID := pullTestImage(t, c)
	t.Cleanup(func() { removeAllPods(t, c) })
	ctx := rpcCtx(t)
	missing := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

	code := func(err error) codes.Code { return status.Code(err) }
	checks := []struct {
		name string
		err  error
		want codes.Code
	}{}
	add := func(name string, err error, want codes.Code) {
		checks = append(checks, struct {
			name string
			err  error
			want codes.Code
		}{name, err, want})
	}
	_, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "11111111-2222-3333-4444-555555555555"})
	add("PodSandboxStatus of a missing sandbox", err, codes.NotFound)
	_, err = c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: missing})
	add("ContainerStatus of a missing container", err, codes.NotFound)
	_, err = c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{}})
	add("RunPodSandbox without metadata", err, codes.InvalidArgument)
	_, err = c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: "11111111-2222-3333-4444-555555555555"})
	add("StopPodSandbox of a missing sandbox", err, codes.OK)
	_, err = c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: "11111111-2222-3333-4444-555555555555"})
	add("RemovePodSandbox of a missing sandbox", err, codes.OK)
	_, err = c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: missing})
	add("StopContainer of a missing container", err, codes.OK)
	_, err = c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: missing})
	add("RemoveContainer of a missing container", err, codes.OK)
	_, err = c.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: "sha256:" + missing}})
	add("RemoveImage of a missing image", err, codes.OK)
	is, err := c.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "example.com/none:1"}})
	add("ImageStatus of a missing image", err, codes.OK)
	if err == nil && is.Image != nil {
		t.Errorf("ImageStatus of a missing image returned %v, want nil", is.Image)
	}
	tctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	_, err = c.PullImage(tctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref + "-x"}})
	cancel()
	add("PullImage past its deadline", err, codes.DeadlineExceeded)

	pod, ctr := runPodWithContainer(t, c, "errors", imgID, "")
	_, err = c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: podConfig("errors", "")})
	add("RunPodSandbox with a reserved name", err, codes.AlreadyExists)
	_, err = c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: containerConfig("sleeper", imgID, "true")})
	add("CreateContainer with a reserved name", err, codes.AlreadyExists)
	_, err = c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: containerConfig("noimage", "example.com/none:1", "true")})
	add("CreateContainer with a missing image", err, codes.NotFound)
	badSig := containerConfig("badsig", imgID, "true")
	badSig.StopSignal = runtimeapi.Signal(999)
	_, err = c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: badSig})
	add("CreateContainer with an unknown stop signal", err, codes.InvalidArgument)
	_, err = c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ctr, Cmd: []string{"sleep", "10"}, Timeout: 1})
	add("ExecSync past its timeout", err, codes.DeadlineExceeded)

	for _, ch := range checks {
		if code(ch.err) != ch.want {
			t.Errorf("%s: %v, want code %v", ch.name, ch.err, ch.want)
		}
	}
	es, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ctr, Cmd: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
	if err != nil || es.ExitCode != 3 || string(es.Stdout) != "out\n" || string(es.Stderr) != "err\n" {
		t.Errorf("ExecSync: %+v, %v; want exit 3, stdout out, stderr err", es, err)
	}
	// The streaming server listens on loopback only.
	for name, url := range map[string]func() (string, error){
		"Exec": func() (string, error) {
			r, err := c.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: ctr, Cmd: []string{"true"}, Stdout: true})
			return r.GetUrl(), err
		},
		"Attach": func() (string, error) {
			r, err := c.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: ctr, Stdout: true})
			return r.GetUrl(), err
		},
		"PortForward": func() (string, error) {
			r, err := c.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: pod, Port: []int32{80}})
			return r.GetUrl(), err
		},
	} {
		if u, err := url(); err != nil || !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Errorf("%s URL %q, %v; want one on 127.0.0.1", name, u, err)
		}
	}
	if r := env.Run("api-service"); r.Code == 0 || !strings.Contains(r.Stderr, "kubelet-service") {
		t.Errorf("rkt api-service: %s", r)
	}
}
