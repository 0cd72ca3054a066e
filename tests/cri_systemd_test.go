package tests

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRISystemdActivation starts the service as systemd would: the socket
// passed as fd 3 (LISTEN_FDS), NOTIFY_SOCKET set. It must serve on the
// passed socket (not create its own), send READY=1 once it serves, and
// STOPPING=1 on SIGTERM, then exit 0.
func TestCRISystemdActivation(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	dir := t.TempDir()
	sockPath := filepath.Join(dir, "activated.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sockPath, Net: "unix"})
	must(t, "listen", err)
	lf, err := l.File()
	must(t, "listener file", err)
	l.SetUnlinkOnClose(false) // the service owns the socket now
	l.Close()
	defer lf.Close()

	notifyPath := filepath.Join(dir, "notify.sock")
	nc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyPath, Net: "unixgram"})
	must(t, "listen notify", err)
	defer nc.Close()
	msgs := make(chan string, 10)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := nc.ReadFromUnix(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()

	confDir := filepath.Join(dir, "net.d")
	writeCRINetwork(t, confDir)
	ownSocket := filepath.Join(dir, "not-used.sock")
	args := append(env.GlobalArgs(), "kubelet-service", "--socket="+ownSocket, "--socket-group=root",
		"--stage1-path="+testutil.Stage1Bin(t), "--cni-conf-dir="+confDir)
	// LISTEN_PID must be the service's pid: exec from a shell keeps it.
	cmd := exec.Command("sh", append([]string{"-c", `LISTEN_PID=$$ exec "$0" "$@"`, testutil.RKTBin(t)}, args...)...)
	cmd.Env = append(os.Environ(), "LISTEN_FDS=1", "NOTIFY_SOCKET="+notifyPath)
	cmd.ExtraFiles = []*os.File{lf}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, "start rkt kubelet-service", cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})

	select {
	case m := <-msgs:
		if !strings.Contains(m, "READY=1") {
			t.Fatalf("first notification %q, want READY=1", m)
		}
	case err := <-done:
		t.Fatalf("service exited: %v\n%s", err, out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("no READY=1 within 30s:\n%s", out.String())
	}
	svc := &criService{Socket: sockPath}
	c := dialCRI(t, svc)
	v, err := c.Version(rpcCtx(t), &runtimeapi.VersionRequest{})
	if err != nil || v.RuntimeName != "rkt" {
		t.Fatalf("Version over the activated socket: %v, %v", v, err)
	}
	if _, err := os.Stat(ownSocket); err == nil {
		t.Errorf("the service created %s although it was socket-activated", ownSocket)
	}
	if !strings.Contains(out.String(), "socketActivated=true") {
		t.Errorf("the service did not log that it was socket-activated:\n%s", out.String())
	}
	must(t, "SIGTERM", cmd.Process.Signal(syscall.SIGTERM))
	select {
	case m := <-msgs:
		if !strings.Contains(m, "STOPPING=1") {
			t.Errorf("notification after SIGTERM %q, want STOPPING=1", m)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("no STOPPING=1 within 30s of SIGTERM")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("service exit after SIGTERM: %v\n%s", err, out.String())
		}
		done <- nil
	case <-time.After(30 * time.Second):
		t.Errorf("service did not exit within 30s of SIGTERM")
	}
}

// TestCRINetworkNotReady: with no CNI network configured, Status reports
// NetworkReady false with a reason, pod-network sandboxes are refused
// (FailedPrecondition) and host-network sandboxes still run.
func TestCRINetworkNotReady(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	empty := t.TempDir()
	svc := startCRIService(t, env, "--cni-conf-dir="+empty)
	c := dialCRI(t, svc)
	t.Cleanup(func() { removeAllPods(t, c) })
	st, err := c.Status(rpcCtx(t), &runtimeapi.StatusRequest{})
	must(t, "Status", err)
	for _, cond := range st.Status.Conditions {
		switch cond.Type {
		case runtimeapi.RuntimeReady:
			if !cond.Status {
				t.Errorf("RuntimeReady is false: %v", cond)
			}
		case runtimeapi.NetworkReady:
			if cond.Status || cond.Reason == "" || !strings.Contains(cond.Message, empty) {
				t.Errorf("NetworkReady condition %v, want false with a reason naming %s", cond, empty)
			}
		}
	}
	_, err = c.RunPodSandbox(rpcCtx(t), &runtimeapi.RunPodSandboxRequest{Config: podConfig("nonet", "")})
	if code := statusCode(err); code != "FailedPrecondition" {
		t.Errorf("RunPodSandbox without a network: %v, want FailedPrecondition", err)
	}
	pc := podConfig("hostnet", "")
	pc.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc}); err != nil {
		t.Errorf("host-network RunPodSandbox without a CNI network: %v", err)
	}
}
