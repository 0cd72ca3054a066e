package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// criState is everything the kubelet lists, as comparable text, and the
// supervisor pid of every sandbox.
type criState struct {
	pods, ctrs []string
	pids       map[string]string
}

// criSnapshot reads what the service lists.
func criSnapshot(t *testing.T, c *criClient) criState {
	t.Helper()
	var pods, ctrs []string
	ctx := rpcCtx(t)
	lp, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	must(t, "ListPodSandbox", err)
	pids := map[string]string{}
	for _, p := range lp.Items {
		pods = append(pods, marshal(t, p))
		st, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: p.Id, Verbose: true})
		must(t, "PodSandboxStatus", err)
		var info struct {
			Pid int `json:"pid"`
		}
		must(t, "parse sandbox info", json.Unmarshal([]byte(st.Info["info"]), &info))
		pids[p.Id] = fmt.Sprint(info.Pid)
		pods = append(pods, marshal(t, st.Status))
	}
	lc, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	must(t, "ListContainers", err)
	for _, ct := range lc.Containers {
		ctrs = append(ctrs, marshal(t, ct))
		st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ct.Id})
		must(t, "ContainerStatus", err)
		ctrs = append(ctrs, marshal(t, st.Status))
	}
	sort.Strings(pods)
	sort.Strings(ctrs)
	return criState{pods, ctrs, pids}
}

// sameAfter runs restart, which stops the service and starts it again
// (maybe another version), and checks that the service then lists exactly
// before, every sandbox with the same supervisor process; it returns a
// client of the service.
func sameAfter(t *testing.T, svc *criService, what string, before criState, restart func()) *criClient {
	t.Helper()
	restart()
	c := dialCRI(t, svc)
	after := criSnapshot(t, c)
	diff(t, "sandboxes after "+what, before.pods, after.pods)
	diff(t, "containers after "+what, before.ctrs, after.ctrs)
	for id, pid := range before.pids {
		if after.pids[id] != pid || pid == "0" {
			t.Errorf("pod %s: supervisor pid %s before %s, %s after", id, pid, what, after.pids[id])
		}
	}
	return c
}

func marshal(t *testing.T, m proto.Message) string {
	b, err := protojson.MarshalOptions{Multiline: false}.Marshal(m)
	must(t, "marshal", err)
	return string(b)
}

// TestCRIRestart kills the service with SIGKILL while 10 pods run, starts
// it again (and once more after a SIGTERM) and checks that it lists exactly the same sandboxes and
// containers (IDs, metadata, states, timestamps, exit codes, log paths),
// that the pods never stopped (same supervisor pids, containers running)
// and that their names are still reserved.
func TestCRIRestart(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	logDir := podLogDirOf(t, svc)
	for i := 0; i < 10; i++ {
		runPodWithContainer(t, c, fmt.Sprintf("restart-%d", i), imgID, logDir)
	}
	// one exited container too, to check exit codes and finish times
	pod0, _ := runPodWithContainer(t, c, "restart-exited", imgID, logDir)
	exited := runExit7(t, c, pod0, podConfig("restart-exited", logDir), imgID)

	before := criSnapshot(t, c)
	if len(before.pids) != 11 || len(before.ctrs) != 2*12 {
		t.Fatalf("before the restart: %d pods, %d container entries; want 11 and 24", len(before.pids), len(before.ctrs))
	}
	sameAfter(t, svc, "a SIGKILL", before, func() { svc.Kill(); svc.Restart() })
	// A graceful stop (SIGTERM) leaves the pods running too.
	c = sameAfter(t, svc, "a SIGTERM", before, func() { svc.stop(); svc.Restart() })
	_, err := c.RunPodSandbox(rpcCtx(t), &runtimeapi.RunPodSandboxRequest{Config: podConfig("restart-3", logDir)})
	if err == nil {
		t.Errorf("after the restart a duplicate sandbox name was accepted")
	}
	st, err := c.ContainerStatus(rpcCtx(t), &runtimeapi.ContainerStatusRequest{ContainerId: exited})
	must(t, "ContainerStatus", err)
	if st.Status.ExitCode != 7 || st.Status.Reason != "Error" {
		t.Errorf("exited container after the restart: exit %d reason %q; want 7 Error", st.Status.ExitCode, st.Status.Reason)
	}
}

// runExit7 runs a container that exits 7 in the sandbox and waits until
// it has exited; it returns its ID.
func runExit7(t *testing.T, c *criClient, sandbox string, pc *runtimeapi.PodSandboxConfig, image string) string {
	t.Helper()
	ctx := rpcCtx(t)
	ex, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sandbox,
		Config: containerConfig("exits", image, "sh", "-c", "exit 7"), SandboxConfig: pc})
	must(t, "CreateContainer", err)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ex.ContainerId})
	must(t, "StartContainer", err)
	waitContainerState(t, c, ex.ContainerId, runtimeapi.ContainerState_CONTAINER_EXITED)
	return ex.ContainerId
}

// diff reports entries that differ between two sorted lists.
func diff(t *testing.T, what string, a, b []string) {
	t.Helper()
	if len(a) != len(b) {
		t.Errorf("%s: %d entries, %d before", what, len(b), len(a))
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			t.Errorf("%s differ:\nbefore: %s\nafter:  %s", what, a[i], b[i])
		}
	}
}

// waitContainerState polls until a container reaches state.
func waitContainerState(t *testing.T, c *criClient, id string, state runtimeapi.ContainerState) {
	t.Helper()
	for i := 0; i < 300; i++ {
		st, err := c.ContainerStatus(rpcCtx(t), &runtimeapi.ContainerStatusRequest{ContainerId: id})
		must(t, "ContainerStatus", err)
		if st.Status.State == state {
			return
		}
		sleepShort()
	}
	t.Fatalf("container %s never reached %v", id, state)
}

// TestCRIRestartPrivateMounts: a service restarted in a new private mount
// namespace (as a systemd unit with private mounts is) adds a container
// to a pod it started before, whose supervisor stays in the first one: the
// container runs on its image's rootfs with its image volume, and the
// service keeps no mount of the pod in its own namespace.
func TestCRIRestartPrivateMounts(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIServicePrivateMounts(t, env)
	c := dialCRI(t, svc)
	ref, imgID := pullTestImage(t, c)
	logDir := podLogDirOf(t, svc)
	pod, first := runPodWithContainer(t, c, "private-mounts", imgID, logDir)
	gone, _ := runPodWithContainer(t, c, "gone", imgID, logDir)
	svc.Kill()
	svc.Restart()
	c = dialCRI(t, svc)
	ctx := rpcCtx(t)
	// A pod stopped after the restart loses its network while pod keeps
	// the old mount namespace, with its network namespace's mount, alive.
	_, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: gone})
	must(t, "StopPodSandbox after the restart", err)
	_, err = c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: gone})
	must(t, "RemovePodSandbox after the restart", err)
	veths := func() []string {
		out, err := exec.Command("ip", "-o", "link", "show", "master", svc.bridge(t)).Output()
		must(t, "list the bridge's ports", err)
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	// (the kernel frees a network namespace, with its veths, in the
	// background)
	deadline := time.Now().Add(10 * time.Second)
	left := veths()
	for len(left) != 1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		left = veths()
	}
	if len(left) != 1 {
		t.Errorf("the bridge has %d ports after one of two pods was removed, want 1:\n%s", len(left), strings.Join(left, "\n"))
	}
	cfg := containerConfig("after", imgID, "sleep", "100000")
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/iv", Readonly: true, Image: &runtimeapi.ImageSpec{Image: ref}}}
	r, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: cfg,
		SandboxConfig: podConfig("private-mounts", logDir)})
	must(t, "CreateContainer after the restart", err)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: r.ContainerId})
	must(t, "StartContainer after the restart", err)
	for _, id := range []string{first, r.ContainerId} {
		x, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Timeout: 30,
			Cmd: []string{"sh", "-c", "test -x /bin/sleep && echo ok"}})
		must(t, "ExecSync", err)
		if string(x.Stdout) != "ok\n" {
			t.Errorf("container %s: %q %q, want ok", id, x.Stdout, x.Stderr)
		}
	}
	x, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: r.ContainerId, Timeout: 30,
		Cmd: []string{"test", "-x", "/iv/bin/busybox"}})
	must(t, "ExecSync", err)
	if x.ExitCode != 0 {
		t.Errorf("the image volume of the container created after the restart is not the image: %d %q", x.ExitCode, x.Stderr)
	}
	// PortForward reaches the pod's network namespace, whose file is an
	// empty one in the service's mount namespace.
	x, err = c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: first, Timeout: 30,
		Cmd: []string{"sh", "-c", "mkdir -p /tmp/www && echo pong > /tmp/www/index.html && httpd -p 80 -h /tmp/www"}})
	must(t, "ExecSync httpd", err)
	if x.ExitCode != 0 {
		t.Fatalf("httpd in the pod: %d %q", x.ExitCode, x.Stderr)
	}
	if got := portForwardGet(t, svc, pod, 80); got != "pong\n" {
		t.Errorf("GET through PortForward after the restart: %q, want pong", got)
	}
	mi, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", svc.cmd.Process.Pid))
	must(t, "read the service's mountinfo", err)
	for _, l := range strings.Split(string(mi), "\n") {
		if strings.Contains(l, " "+filepath.Join(env.DataDir, "pods")+"/") {
			t.Errorf("a pod mount left in the service's mount namespace: %s", l)
		}
	}
	// Removing the container takes its mounts from the supervisor's.
	supervisor := sandboxPid(t, c, pod)
	supervisorMounts := func() string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", supervisor))
		must(t, "read the supervisor's mountinfo", err)
		return string(b)
	}
	if !strings.Contains(supervisorMounts(), "/apps/after-0/fs/rootfs ") {
		t.Fatalf("the rootfs of the container created after the restart is not mounted in the supervisor's mount namespace:\n%s", supervisorMounts())
	}
	_, err = c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: r.ContainerId})
	must(t, "StopContainer", err)
	_, err = c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: r.ContainerId})
	must(t, "RemoveContainer", err)
	// (its directory is deleted in the background)
	deadline = time.Now().Add(10 * time.Second)
	mounts := supervisorMounts()
	for strings.Contains(mounts, "after-0") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		mounts = supervisorMounts()
	}
	for _, l := range strings.Split(mounts, "\n") {
		if strings.Contains(l, "after-0") {
			t.Errorf("a mount of the removed container left in the supervisor's mount namespace: %s", l)
		}
	}
}

// portForwardGet GETs / from port of pod through `crictl port-forward`.
func portForwardGet(t *testing.T, svc *criService, pod string, port int) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, "pick a local port", err)
	local := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, toolPath(t, "crictl"), "--runtime-endpoint", svc.Endpoint,
		"port-forward", pod, fmt.Sprintf("%d:%d", local, port))
	cmd.Env = append(os.Environ(), "CRI_CONFIG_FILE=/dev/null")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, "start crictl port-forward", cmd.Start())
	defer func() {
		cancel()
		_ = cmd.Wait()
	}()
	hc := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/", local))
		if err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			must(t, "read the forwarded answer", err)
			return string(b)
		}
		if time.Now().After(deadline) {
			cancel()
			_ = cmd.Wait()
			t.Fatalf("GET through crictl port-forward: %v\ncrictl:\n%s", err, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
