package tests

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/lock"
	"github.com/rkt/rkt/tests/testutil"
)

// sandboxPid returns the pid of a sandbox's stage1 (verbose status info).
func sandboxPid(t *testing.T, c *criClient, id string) int {
	t.Helper()
	st, err := c.PodSandboxStatus(rpcCtx(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	must(t, "PodSandboxStatus", err)
	var info struct {
		Pid int `json:"pid"`
	}
	must(t, "parse sandbox info", json.Unmarshal([]byte(st.Info["info"]), &info))
	if info.Pid <= 0 {
		t.Fatalf("sandbox %s has no stage1 pid: %s", id, st.Info["info"])
	}
	return info.Pid
}

// checkSupervisorDied checks the status of a container whose stage1 was
// SIGKILLed at or after killedAt: exited 137, the supervisor's death in
// its message, and a finish time after its start, no earlier than the kill
// and not in the future.
func checkSupervisorDied(t *testing.T, c *criClient, id string, killedAt time.Time) *runtimeapi.ContainerStatus {
	t.Helper()
	waitContainerState(t, c, id, runtimeapi.ContainerState_CONTAINER_EXITED)
	r, err := c.ContainerStatus(rpcCtx(t), &runtimeapi.ContainerStatusRequest{ContainerId: id})
	must(t, "ContainerStatus", err)
	st := r.Status
	if st.ExitCode != 137 || !strings.Contains(strings.ToLower(st.Message), "supervisor") {
		t.Errorf("container %s: exit code %d, reason %q, message %q; want 137 and the supervisor's death", id, st.ExitCode, st.Reason, st.Message)
	}
	fin := time.Unix(0, st.FinishedAt)
	if st.StartedAt == 0 || st.FinishedAt <= st.StartedAt || fin.Before(killedAt.Add(-time.Second)) || fin.After(time.Now()) {
		t.Errorf("container %s: started_at %d, finished_at %d (%v); want a finish after the start, around the kill at %v", id, st.StartedAt, st.FinishedAt, fin, killedAt)
	}
	return st
}

// TestCRISupervisorDeathTimes: when a pod's stage1 is SIGKILLed its
// containers are EXITED with a finish time, the same on every read and
// across restarts of the service, both when the service saw the death (it
// started that stage1) and when it died while the service was down.
func TestCRISupervisorDeathTimes(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	logDir := podLogDirOf(t, svc)
	seenPod, seenCtr := runPodWithContainer(t, c, "killed-seen", imgID, logDir)
	unseenPod, unseenCtr := runPodWithContainer(t, c, "killed-unseen", imgID, logDir)

	killedAt := time.Now()
	must(t, "kill stage1", syscall.Kill(sandboxPid(t, c, seenPod), syscall.SIGKILL))
	seen := checkSupervisorDied(t, c, seenCtr, killedAt)
	if fin := time.Unix(0, seen.FinishedAt); fin.Sub(killedAt) > 2*time.Second {
		t.Errorf("finish time %v recorded %v after the kill, want at the death", fin, fin.Sub(killedAt))
	}

	unseenPid := sandboxPid(t, c, unseenPod)
	svc.Kill()
	killedAt = time.Now()
	must(t, "kill stage1", syscall.Kill(unseenPid, syscall.SIGKILL))
	time.Sleep(200 * time.Millisecond)
	svc.Restart()
	c = dialCRI(t, svc)
	unseen := checkSupervisorDied(t, c, unseenCtr, killedAt)

	time.Sleep(1100 * time.Millisecond)
	svc.Kill()
	svc.Restart()
	c = dialCRI(t, svc)
	for id, want := range map[string]int64{seenCtr: seen.FinishedAt, unseenCtr: unseen.FinishedAt} {
		r, err := c.ContainerStatus(rpcCtx(t), &runtimeapi.ContainerStatusRequest{ContainerId: id})
		must(t, "ContainerStatus", err)
		if r.Status.FinishedAt != want {
			t.Errorf("container %s: finished_at %d after a restart, %d before", id, r.Status.FinishedAt, want)
		}
	}
}

// TestCRIRepairsDebrisAtStart: what a service killed early in
// RunPodSandbox or RemovePodSandbox leaves (prepare/<uuid>,
// prepare/.new-<uuid>, garbage/<uuid>) and no CRI call reaches is removed
// when the service starts, unless its lock is held (being created or
// deleted right now).
func TestCRIRepairsDebrisAtStart(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	pods := filepath.Join(env.DataDir, "pods")
	old := time.Now().Add(-time.Hour)
	var locks []*lock.FileLock
	mk := func(state, name string, locked bool) string {
		t.Helper()
		d := filepath.Join(pods, state, name)
		if err := os.MkdirAll(filepath.Join(d, "apps"), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
		if locked {
			l, err := lock.TryExclusive(d, lock.Dir)
			if err != nil {
				t.Fatal(err)
			}
			locks = append(locks, l)
		}
		return d
	}
	const u = "cccccccc-0000-4000-8000-0000000000"
	gone := []string{mk("prepare", u+"01", false), mk("prepare", ".new-"+u+"02", false), mk("garbage", u+"03", false)}
	kept := []string{mk("prepare", u+"11", true), mk("prepare", ".new-"+u+"12", true), mk("garbage", u+"13", true)}
	t.Cleanup(func() {
		for _, l := range locks {
			l.Close()
		}
		for _, d := range kept {
			os.RemoveAll(d)
		}
	})
	svc := startCRIService(t, env)
	waitUntil(t, 30*time.Second, "the debris to be removed", func() bool {
		for _, d := range gone {
			if _, err := os.Lstat(d); err == nil {
				return false
			}
		}
		return true
	})
	for _, d := range kept {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s, locked, was removed: %v", d, err)
		}
	}
	// logged once the removal is done: maybe just after the check above
	waitUntil(t, 10*time.Second, "the service to log what it removed", func() bool {
		return strings.Contains(svc.Log(), "removed the debris")
	})
}

// subnetBridge is the bridge rkt gives the default network on a subnet
// other than 172.16.28.0/24 (networking.Config.bridgeFor).
func subnetBridge(t *testing.T, subnet string) string {
	t.Helper()
	_, ipnet, err := net.ParseCIDR(subnet)
	if err != nil {
		t.Fatal(err)
	}
	ones, _ := ipnet.Mask.Size()
	return fmt.Sprintf("rkt-%08x-%d", binary.BigEndian.Uint32(ipnet.IP.To4()), ones)
}

// httpGet fetches http://ip:port/ from the host, retrying while the server
// starts.
func httpGet(t *testing.T, ip string, port int) string {
	t.Helper()
	c := http.Client{Timeout: 2 * time.Second}
	var err error
	for i := 0; i < 50; i++ {
		var r *http.Response
		if r, err = c.Get(fmt.Sprintf("http://%s:%d/", ip, port)); err == nil {
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			return strings.TrimSpace(string(b))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("cannot reach %s:%d from the host: %v", ip, port, err)
	return ""
}

// criWebPod runs a sandbox with an httpd container answering body on port
// 8080, logging in logDir, and returns the sandbox ID and its IP.
func criWebPod(t *testing.T, c *criClient, name, image, body, logDir string) (string, string) {
	t.Helper()
	ctx := rpcCtx(t)
	pc := podConfig(name, logDir)
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox "+name, err)
	cc, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId,
		Config: containerConfig("web", image, append([]string{"sh"}, httpdArgs(8080, body)[2:]...)...), SandboxConfig: pc})
	must(t, "CreateContainer", err)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cc.ContainerId})
	must(t, "StartContainer", err)
	st, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: rp.PodSandboxId})
	must(t, "PodSandboxStatus", err)
	return rp.PodSandboxId, st.Status.GetNetwork().GetIp()
}

// setPodCIDR is the kubelet's UpdateRuntimeConfig with a pod CIDR.
func setPodCIDR(t *testing.T, c *criClient, cidr string) {
	t.Helper()
	_, err := c.UpdateRuntimeConfig(rpcCtx(t), &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: &runtimeapi.RuntimeConfig{
		NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: cidr}}})
	must(t, "UpdateRuntimeConfig "+cidr, err)
}

// TestDefaultNetworkCLIAndCRI: on one host, a CLI pod on its default
// subnet and CRI pods on the kubelet's pod CIDR (the built-in default
// network, no CNI config) run at the same time and are all reachable; so
// are the pods of a new pod CIDR once the old pods are gone, with the
// CLI pod still running. (They used to share the bridge rkt0, which keeps
// the gateway address of the subnet it was first given.)
func TestDefaultNetworkCLIAndCRI(t *testing.T) {
	requireRoot(t)
	pe := newPodEnv(t)
	n := time.Now().UnixNano()
	cliSubnet := fmt.Sprintf("10.%d.%d.0/24", 200+n%50, (n/50)%250)
	podCIDR := fmt.Sprintf("10.%d.%d.0/24", 200+(n/7)%50, (n/13)%250)
	newCIDR := fmt.Sprintf("10.%d.%d.0/24", 200+(n/11)%50, (n/17)%250)
	if cliSubnet == podCIDR || podCIDR == newCIDR || cliSubnet == newCIDR {
		t.Skip("picked the same subnet twice; run again")
	}
	for _, s := range []string{cliSubnet, podCIDR, newCIDR} {
		br := subnetBridge(t, s)
		t.Cleanup(func() { exec.Command("ip", "link", "del", br).Run() })
	}
	svc := startCRIService(t, pe.Env, "--cni-conf-dir="+t.TempDir())
	c := dialCRI(t, svc)
	logDir := podLogDirOf(t, svc)
	_, imgID := pullTestImage(t, c)

	r := pe.Run(append([]string{"run", "--detach", "--default-subnet=" + cliSubnet, pe.image}, httpdArgs(8080, "cli")...)...)
	if r.Code != 0 {
		t.Fatalf("rkt run: %s", r)
	}
	cliPod := strings.TrimSpace(r.Stdout)
	pe.TrackPod(cliPod)
	t.Cleanup(func() { pe.Run("stop", "--force", cliPod) })
	cliIP := pe.waitState(cliPod, "running", 10*time.Second).podIP()

	setPodCIDR(t, c, podCIDR)
	oldPod, oldIP := criWebPod(t, c, "old-cidr", imgID, "cri-old", logDir)
	if got := httpGet(t, cliIP, 8080); got != "cli" {
		t.Errorf("CLI pod %s answered %q", cliIP, got)
	}
	if got := httpGet(t, oldIP, 8080); got != "cri-old" {
		t.Errorf("CRI pod %s answered %q", oldIP, got)
	}

	// the node's pod CIDR changes; the old pods go
	ctx := rpcCtx(t)
	_, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: oldPod})
	must(t, "StopPodSandbox", err)
	_, err = c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: oldPod})
	must(t, "RemovePodSandbox", err)
	setPodCIDR(t, c, newCIDR)
	_, newIP := criWebPod(t, c, "new-cidr", imgID, "cri-new", logDir)
	if _, ipnet, _ := net.ParseCIDR(newCIDR); !ipnet.Contains(net.ParseIP(newIP)) {
		t.Errorf("CRI pod IP %s not in the new pod CIDR %s", newIP, newCIDR)
	}
	if got := httpGet(t, newIP, 8080); got != "cri-new" {
		t.Errorf("CRI pod %s answered %q", newIP, got)
	}
	if got := httpGet(t, cliIP, 8080); got != "cli" {
		t.Errorf("CLI pod %s answered %q after the pod CIDR changed", cliIP, got)
	}
}
