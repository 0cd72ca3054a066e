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

// TestCRINetworkOutOfTheBox: with no CNI config (a fresh install), pods
// get the built-in default network and NetworkReady is true; a config
// whose plugin is missing makes NetworkReady false with a reason, refuses
// pod networks with FailedPrecondition and still runs host-network pods.
func TestCRINetworkOutOfTheBox(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	empty := t.TempDir()
	svc := startCRIService(t, env, "--cni-conf-dir="+empty)
	c := dialCRI(t, svc)
	t.Cleanup(func() { removeAllPods(t, c) })
	networkReady(t, c, true, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: podConfig("outofthebox", "")})
	must(t, "RunPodSandbox with no CNI config", err)
	st, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: rp.PodSandboxId})
	must(t, "PodSandboxStatus", err)
	if ip := st.GetStatus().GetNetwork().GetIp(); !strings.HasPrefix(ip, "172.16.28.") {
		t.Errorf("pod IP %q, want one of the built-in default network (172.16.28.0/24)", ip)
	}

	broken := t.TempDir()
	conf := `{"cniVersion": "1.0.0", "name": "broken", "plugins": [{"type": "no-such-plugin"}]}`
	if err := os.WriteFile(filepath.Join(broken, "10-broken.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	svc.stop()
	svc.extraArgs = []string{"--cni-conf-dir=" + broken}
	svc.Restart()
	networkReady(t, c, false, "no-such-plugin")
	_, err = c.RunPodSandbox(rpcCtx(t), &runtimeapi.RunPodSandboxRequest{Config: podConfig("nonet", "")})
	if code := statusCode(err); code != "FailedPrecondition" {
		t.Errorf("RunPodSandbox with a broken network: %v, want FailedPrecondition", err)
	}
	pc := podConfig("hostnet", "")
	pc.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}
	if _, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc}); err != nil {
		t.Errorf("host-network RunPodSandbox with a broken network: %v", err)
	}
}

// networkReady checks the Status conditions: RuntimeReady, and NetworkReady
// as want (with a message containing why when it is false).
func networkReady(t *testing.T, c *criClient, want bool, why string) {
	t.Helper()
	st, err := c.Status(rpcCtx(t), &runtimeapi.StatusRequest{})
	must(t, "Status", err)
	for _, cond := range st.Status.Conditions {
		switch cond.Type {
		case runtimeapi.RuntimeReady:
			if !cond.Status {
				t.Errorf("RuntimeReady is false: %v", cond)
			}
		case runtimeapi.NetworkReady:
			if cond.Status != want || !want && (cond.Reason == "" || !strings.Contains(cond.Message, why)) {
				t.Errorf("NetworkReady condition %v, want %v (%s)", cond, want, why)
			}
		}
	}
}
