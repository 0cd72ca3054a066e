package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
	removeNATOf(t, id)
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

// removeNATOf deletes the nat rules tagged with a pod and the per-pod
// chains they jump to, as `iptables -t nat -F; iptables -t nat -X` would
// (without touching anyone else's).
func removeNATOf(t *testing.T, uuid string) {
	t.Helper()
	out, err := exec.Command("iptables-save", "-t", "nat").Output()
	if err != nil {
		t.Fatal(err)
	}
	chains := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(l, "-A ") || !strings.Contains(l, uuid) {
			continue
		}
		args := strings.Fields(l)
		if c := args[len(args)-1]; args[len(args)-2] == "-j" && strings.HasPrefix(c, "CNI-") && !strings.HasPrefix(c, "CNI-HOSTPORT") {
			chains[c] = true
		}
		// iptables-save quotes the comment as a shell would
		if out, err := exec.Command("sh", "-c", "iptables -w -t nat -D "+strings.TrimPrefix(l, "-A ")).CombinedOutput(); err != nil {
			t.Fatalf("iptables -D %s: %v: %s", l, err, out)
		}
	}
	if len(chains) == 0 {
		t.Fatalf("pod %s has no NAT chain:\n%s", uuid, out)
	}
	for ch := range chains {
		for _, op := range []string{"-F", "-X"} {
			if out, err := exec.Command("iptables", "-w", "-t", "nat", op, ch).CombinedOutput(); err != nil {
				t.Fatalf("iptables %s %s: %v: %s", op, ch, err, out)
			}
		}
	}
}
