package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIAfterReboot: what a node finds after a power cut or a reboot:
// pods on disk whose processes, mounts, network namespaces, cgroups,
// bridges and NAT rules are gone, and whose recorded pids now belong to
// other processes. The service starts on it and lists the sandboxes not
// ready and their containers exited; the kubelet's cleanup
// (StopPodSandbox, RemovePodSandbox) and `rkt gc` release what the disk
// kept (IP reservations, CNI cache, pod directories) without signalling
// the processes that have the recorded pids now; new pods run.
func TestCRIAfterReboot(t *testing.T) {
	requireRoot(t)
	pe := newPodEnv(t)
	svc := startCRIService(t, pe.Env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	logDir := podLogDirOf(t, svc)
	sandboxes := map[string]string{} // sandbox -> container
	for _, name := range []string{"reboot-0", "reboot-1"} {
		pod, ctr := runPodWithContainer(t, c, name, imgID, logDir)
		sandboxes[pod] = ctr
	}
	cliPod := pe.runDetached(pe.image, "--exec=/bin/sleep", "--", "600")
	pe.waitState(cliPod, "running", 20*time.Second)

	rebootNode(t, svc, pe.bridge)
	decoy := startDecoy(t)
	giveRecordedPids(t, pe.DataDir, decoy)

	svc.Restart()
	c = dialCRI(t, svc)
	ctx := rpcCtx(t)
	lp, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	must(t, "ListPodSandbox", err)
	if len(lp.Items) != len(sandboxes) {
		t.Fatalf("after the reboot: %d sandboxes listed, want %d", len(lp.Items), len(sandboxes))
	}
	for _, p := range lp.Items {
		if p.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			t.Errorf("sandbox %s after the reboot: %v, want NOTREADY", p.Id, p.State)
		}
		st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: sandboxes[p.Id]})
		must(t, "ContainerStatus", err)
		s := st.Status
		if s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.ExitCode != 137 || s.FinishedAt < s.StartedAt {
			t.Errorf("container %s after the reboot: %v exit %d, started %d finished %d; want EXITED, 137 (the supervisor died), finished after started",
				s.Id, s.State, s.ExitCode, s.StartedAt, s.FinishedAt)
		}
	}
	if st := pe.status(cliPod); st.State != "exited" {
		t.Errorf("CLI pod after the reboot: %s, want exited", st.State)
	}

	// the kubelet's cleanup, then rkt gc for the CLI's pod
	for id := range sandboxes {
		_, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
		must(t, "StopPodSandbox "+id, err)
		_, err = c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
		must(t, "RemovePodSandbox "+id, err)
	}
	pe.RunOK("gc", "--grace-period=0s")
	if left, _ := filepath.Glob(filepath.Join(pe.DataDir, "pods", "*", "*")); len(left) > 0 {
		t.Errorf("pod directories left after the cleanup: %v", left)
	}
	for _, l := range testutil.FindLeaks(pe.DataDir, pe.SeenPods()) {
		if l.PID() != svc.cmd.Process.Pid {
			t.Errorf("left after the cleanup: %s", l)
		}
	}
	if !processAlive(decoy.Process.Pid) {
		t.Fatalf("process %d, which had a recorded pid of a pod, was killed", decoy.Process.Pid)
	}

	// the node runs new pods, on bridges made again
	pod, _ := runPodWithContainer(t, c, "after-reboot", imgID, logDir)
	st, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: pod})
	must(t, "PodSandboxStatus", err)
	if st.Status.GetNetwork().GetIp() == "" {
		t.Errorf("a new sandbox after the reboot has no IP")
	}
	cli2 := pe.runDetached(pe.image, "--exec=/bin/sleep", "--", "600")
	pe.waitState(cli2, "running", 20*time.Second)
	pe.RunOK("stop", "--force", cli2)
}

// rebootNode stops the service and leaves the node as a reboot does
// (testutil.PowerCut), the service's pod bridge and the other bridges
// given deleted.
func rebootNode(t *testing.T, svc *criService, bridges ...string) {
	t.Helper()
	svc.stop()
	testutil.PowerCut(t, svc.env.DataDir, svc.env.SeenPods())
	for _, br := range append([]string{svc.bridge(t)}, bridges...) {
		if out, err := exec.Command("ip", "link", "del", br).CombinedOutput(); err != nil {
			t.Fatalf("cannot delete bridge %s: %v: %s", br, err, out)
		}
	}
}

// startDecoy starts a process that stands for whatever a rebooted host
// runs under a pid a pod recorded; it is killed at cleanup.
func startDecoy(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// giveRecordedPids makes every pid a running pod of dataDir recorded (its
// supervisor's, its containers' init) the decoy's, as pid reuse after a
// reboot does.
func giveRecordedPids(t *testing.T, dataDir string, decoy *exec.Cmd) {
	t.Helper()
	pid := decoy.Process.Pid
	files, _ := filepath.Glob(filepath.Join(dataDir, "pods", "run", "*", "stage1.pid"))
	if len(files) == 0 {
		t.Fatalf("no stage1.pid under %s", dataDir)
	}
	for _, f := range files {
		must(t, "write "+f, os.WriteFile(f, []byte(strconv.Itoa(pid)+"\n"), 0o600))
	}
	states, _ := filepath.Glob(filepath.Join(dataDir, "pods", "run", "*", "runc", "*", "state.json"))
	for _, f := range states {
		b, err := os.ReadFile(f)
		must(t, "read "+f, err)
		var st map[string]any
		must(t, "parse "+f, json.Unmarshal(b, &st))
		st["init_process_pid"] = pid
		b, err = json.Marshal(st)
		must(t, "marshal "+f, err)
		must(t, "write "+f, os.WriteFile(f, b, 0o600))
	}
}

// processAlive reports whether pid runs (a zombie does not).
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}
