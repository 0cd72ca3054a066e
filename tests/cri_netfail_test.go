package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// failingPlugin is a CNI plugin whose ADD waits until the pod's supervisor
// is up (its stage1.pid, next to the netns), notes whether it saw it, and
// fails; DEL succeeds.
const failingPlugin = `#!/bin/sh
case "$CNI_COMMAND" in
ADD)
	pod=$(dirname "$CNI_NETNS")
	seen=no
	for i in $(seq 100); do
		if [ -s "$pod/stage1.pid" ]; then seen=yes; break; fi
		sleep 0.05
	done
	echo "$seen" >> "$(dirname "$0")/seen"
	echo '{"cniVersion":"1.0.0","code":11,"msg":"rkt test: ADD fails"}'
	exit 1;;
VERSION)
	echo '{"cniVersion":"1.0.0","supportedVersions":["0.4.0","1.0.0"]}';;
esac
exit 0
`

// TestCRIRunPodSandboxFailedADD: the CNI ADD runs while the sandbox's
// supervisor starts; when the ADD fails after the supervisor is up,
// RunPodSandbox fails and leaves nothing behind (supervisor, netns,
// mounts, cgroups: the environment's leak check), and no sandbox is listed.
func TestCRIRunPodSandboxFailedADD(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	bin := filepath.Join(env.Root, "cni-bin")
	conf := filepath.Join(env.Root, "net-fail.d")
	for _, d := range []string{bin, conf} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "rkt-test-fail"), []byte(failingPlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	list := `{"cniVersion":"1.0.0","name":"rkt-test-fail","plugins":[{"type":"rkt-test-fail"}]}`
	if err := os.WriteFile(filepath.Join(conf, "10-fail.conflist"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	svc := startCRIService(t, env, "--cni-conf-dir="+conf, "--cni-bin-dir="+bin)
	c := dialCRI(t, svc)
	ctx := rpcCtx(t)
	for i := 0; i < 2; i++ {
		_, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: podConfig("netfail", t.TempDir())})
		if err == nil || !strings.Contains(err.Error(), "ADD fails") {
			t.Fatalf("RunPodSandbox with a failing CNI ADD: %v, want the plugin's error", err)
		}
	}
	seen, err := os.ReadFile(filepath.Join(bin, "seen"))
	if err != nil || string(seen) != "yes\nyes\n" {
		t.Errorf("the supervisor was not up during the ADDs: %q (%v)", seen, err)
	}
	l, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 0 {
		t.Errorf("sandboxes listed after failed RunPodSandbox: %v", l.Items)
	}
}

// TestCRIStopPodNATGone: the NAT rules of a sandbox's network were removed
// behind the CNI plugins' back (iptables flushed; an interrupted
// teardown). The bridge plugin's DEL then fails on its missing chain, but
// StopPodSandbox and RemovePodSandbox succeed and leave nothing behind
// (netns, address, veth, rules, cache: the leak check).
func TestCRIStopPodNATGone(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	ctx := rpcCtx(t)
	pc := podConfig("natgone", t.TempDir())
	pc.PortMappings = []*runtimeapi.PortMapping{{ContainerPort: 80, HostPort: int32(freePort(t))}}
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	id := rp.PodSandboxId
	testutil.RemovePodNAT(t, id, false)
	_, err = c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	must(t, "StopPodSandbox", err)
	_, err = c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	must(t, "RemovePodSandbox", err)
	if veths, _ := exec.Command("ip", "-o", "link", "show", "master", svc.bridge(t)).Output(); len(veths) > 0 {
		t.Errorf("veths left on the pod bridge: %s", veths)
	}
	// before the environment's leak check, which runs rkt gc first
	for _, l := range testutil.FindLeaks(env.DataDir, env.SeenPods()) {
		if l.PID() != svc.cmd.Process.Pid {
			t.Errorf("left behind: %v", l)
		}
	}
}

// slowPlugin is a CNI plugin whose ADD notes that it started (file
// "adding" beside it) and waits for a file "release" there; DEL succeeds.
const slowPlugin = `#!/bin/sh
dir=$(dirname "$0")
case "$CNI_COMMAND" in
ADD)
	touch "$dir/adding"
	while [ ! -e "$dir/release" ]; do sleep 0.02; done
	echo '{"cniVersion":"1.0.0"}';;
VERSION)
	echo '{"cniVersion":"1.0.0","supportedVersions":["0.4.0","1.0.0"]}';;
esac
exit 0
`

// TestCRIKilledDuringADD: the service is SIGKILLed while the sandbox's CNI
// ADDs run (the bridge plugin's done: veth, address and NAT rules exist; the
// next one's ADD still runs), its supervisor killed too or left running
// (the service starts it during the ADDs). With no kubelet to stop the
// sandbox, the restarted service's repair stops and releases all of it
// (and stops the orphaned ADD); the sandbox stays listed, not ready, until
// it is removed.
func TestCRIKilledDuringADD(t *testing.T) {
	requireRoot(t)
	t.Run("stage1 killed", func(t *testing.T) { testCRIKilledDuringADD(t, true) })
	t.Run("stage1 alive", func(t *testing.T) { testCRIKilledDuringADD(t, false) })
}

func testCRIKilledDuringADD(t *testing.T, killStage1 bool) {
	env := testutil.NewEnv(t)
	bin := filepath.Join(env.Root, "cni-bin")
	conf := filepath.Join(env.Root, "net-slow.d")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "rkt-test-slow"), []byte(slowPlugin), 0o700); err != nil {
		t.Fatal(err)
	}
	writeCRINetwork(t, conf)
	listPath := filepath.Join(conf, "10-rkt-cri-test.conflist")
	b, err := os.ReadFile(listPath)
	if err != nil {
		t.Fatal(err)
	}
	var list map[string]any
	must(t, "parse conflist", json.Unmarshal(b, &list))
	list["plugins"] = append(list["plugins"].([]any), map[string]any{"type": "rkt-test-slow"})
	b, _ = json.Marshal(list)
	must(t, "write conflist", os.WriteFile(listPath, b, 0o600))
	bridge := list["plugins"].([]any)[0].(map[string]any)["bridge"].(string)
	svc := startCRIService(t, env, "--cni-conf-dir="+conf, "--cni-bin-dir="+bin+","+pluginDir(t), "--repair-interval=1s")
	c := dialCRI(t, svc)
	t.Cleanup(func() { removeAllPods(t, c) })
	// first of the cleanups: a failed test's pending ADD ends
	t.Cleanup(func() { os.WriteFile(filepath.Join(bin, "release"), nil, 0o600) })

	go c.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: podConfig("killed-add", "")})
	waitFile(t, filepath.Join(bin, "adding"))
	pods, _ := filepath.Glob(filepath.Join(env.DataDir, "pods", "run", "*"))
	if len(pods) != 1 {
		t.Fatalf("pods in run/: %v", pods)
	}
	uuid := filepath.Base(pods[0])
	if veths, _ := exec.Command("ip", "-o", "link", "show", "master", bridge).Output(); len(veths) == 0 {
		t.Fatal("no veth on the bridge while the ADD runs")
	}
	if killStage1 {
		killAStage1(t, env.DataDir)
	}
	svc.Kill()
	svc.Restart()

	deadline := time.Now().Add(20 * time.Second)
	for {
		var left []string
		for _, l := range testutil.FindLeaks(env.DataDir, env.SeenPods()) {
			if l.PID() != svc.cmd.Process.Pid && l.Kind != "pod" { // it stays, not ready, until removed
				left = append(left, l.String())
			}
		}
		if veths, _ := exec.Command("ip", "-o", "link", "show", "master", bridge).Output(); len(veths) > 0 {
			left = append(left, "veth: "+string(veths))
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the resources of the sandbox cut off while starting were not released:\n  %s", strings.Join(left, "\n  "))
		}
		time.Sleep(200 * time.Millisecond)
	}
	l, err := c.ListPodSandbox(rpcCtx(t), &runtimeapi.ListPodSandboxRequest{})
	must(t, "ListPodSandbox", err)
	if len(l.Items) != 1 || l.Items[0].Id != uuid || l.Items[0].State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Fatalf("sandboxes %v, want %s not ready", l.Items, uuid)
	}
	_, err = c.RemovePodSandbox(rpcCtx(t), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: uuid})
	must(t, "RemovePodSandbox", err)
}

// pluginDir is the directory of the CNI plugins installed on the host.
func pluginDir(t *testing.T) string {
	for _, d := range []string{"/usr/lib/cni", "/opt/cni/bin"} {
		if _, err := os.Stat(filepath.Join(d, "bridge")); err == nil {
			return d
		}
	}
	t.Skip("no CNI plugins")
	return ""
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
	}
}
