package networking

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rkt/rkt/pkg/schema"
)

// helperEnv carries the Setup arguments to TestHelperSetup in a child process.
const helperEnv = "RKT_NETWORKING_HELPER"

type helperArgs struct {
	Cfg Config
	Pod PodNet
}

// TestHelperSetup is not a test: run as a child by TestSetupKilled, it calls
// Setup and gets SIGKILLed in the middle of it.
func TestHelperSetup(t *testing.T) {
	arg := os.Getenv(helperEnv)
	if arg == "" {
		t.Skip("helper process only")
	}
	var a helperArgs
	if err := json.Unmarshal([]byte(arg), &a); err != nil {
		t.Fatal(err)
	}
	_, err := Setup(context.Background(), a.Cfg, a.Pod)
	t.Fatalf("Setup returned before being killed: %v", err)
}

// writeHangPlugin installs a CNI plugin "hang" in a new dir: its ADD creates
// marker and sleeps; other commands succeed at once.
func writeHangPlugin(t *testing.T, marker string) string {
	dir := t.TempDir()
	script := fmt.Sprintf(`#!/bin/sh
case "$CNI_COMMAND" in
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]}' ;;
ADD) touch %q; exec sleep 60 ;;
esac
exit 0
`, marker)
	if err := os.WriteFile(filepath.Join(dir, "hang"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSetupKilled(t *testing.T) {
	requireRoot(t)
	tests := []struct {
		name       string
		hangFirst  bool // the kill comes before any network was added
		wantVethUp bool
	}{
		{"before-add", true, false},
		{"after-bridge-add", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			marker := filepath.Join(t.TempDir(), "hanging")
			cfg.PluginDirs = append([]string{writeHangPlugin(t, marker)}, cfg.pluginDirs()...)
			bridge := fmt.Sprintf(`{"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":true,"ipam":{"type":"host-local","subnet":%q}}`, cfg.DefaultBridge, cfg.DefaultSubnet)
			plugins := []string{bridge, `{"type":"hang"}`}
			if tt.hangFirst {
				plugins[0], plugins[1] = plugins[1], plugins[0]
			}
			conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"crashnet","plugins":[%s]}`, strings.Join(plugins, ","))
			if err := os.WriteFile(filepath.Join(cfg.ConfDir, "crashnet.conflist"), []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			pn := newPod(t, cfg, "crashnet")
			runKilledSetup(t, cfg, pn, marker)

			res, err := Load(pn.Dir)
			if err != nil || res.Complete || !isNetNS(res.NetNS) {
				t.Fatalf("after kill: Load = %+v, %v (netns mounted %v)", res, err, res != nil && isNetNS(res.NetNS))
			}
			left := strings.Join(hostLeftovers(t, cfg, pn, cfg.DefaultBridge), "\n")
			if strings.Contains(left, "veth:") != tt.wantVethUp {
				t.Fatalf("after kill, veth present=%v, want %v:\n%s", !tt.wantVethUp, tt.wantVethUp, left)
			}
			if err := Teardown(context.Background(), cfg, pn.Dir); err != nil {
				t.Fatalf("Teardown: %v", err)
			}
			if left := hostLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
				t.Fatalf("after Teardown: %v", left)
			}
		})
	}
}

// runKilledSetup runs Setup in a child process and SIGKILLs it (and the
// plugin it runs) once the hang plugin has started.
func runKilledSetup(t *testing.T, cfg Config, pn PodNet, marker string) {
	t.Helper()
	killSetup(t, cfg, pn, marker, true)
}

// killSetup runs Setup in a child process and SIGKILLs it once marker
// exists; withPlugins kills the plugins it runs too, else they run on.
func killSetup(t *testing.T, cfg Config, pn PodNet, marker string, withPlugins bool) {
	t.Helper()
	arg, err := json.Marshal(helperArgs{Cfg: cfg, Pod: pn})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSetup$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(arg))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			_ = cmd.Wait()
			t.Fatalf("hang plugin never ran; helper output:\n%s", out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	victim := -pgid
	if !withPlugins {
		victim = cmd.Process.Pid
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// TestTeardownStopsOrphanedADD: a stage0 killed during a CNI ADD leaves
// the plugin running; the Teardown of the pod (a kubelet stopping it after
// the service restarted) must not let that ADD create what the DEL
// removes after the DEL ran.
func TestTeardownStopsOrphanedADD(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	dir, state := t.TempDir(), t.TempDir()
	marker, release := filepath.Join(dir, "adding"), filepath.Join(dir, "release")
	// ADD waits for release, then makes a resource named after the pod
	// (as bridge makes a veth, an address, NAT rules); DEL removes it.
	script := fmt.Sprintf(`#!/bin/sh
case "$CNI_COMMAND" in
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["1.0.0"]}' ;;
ADD) touch %[1]q; while [ ! -e %[2]q ]; do sleep 0.02; done
	touch %[3]q/"$CNI_CONTAINERID"; echo '{"cniVersion":"1.0.0"}' ;;
DEL) rm -f %[3]q/"$CNI_CONTAINERID" ;;
esac
exit 0
`, marker, release, state)
	if err := os.WriteFile(filepath.Join(dir, "slow"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg.PluginDirs = append([]string{dir}, cfg.pluginDirs()...)
	conf := `{"cniVersion":"1.0.0","name":"slownet","plugins":[{"type":"slow"}]}`
	if err := os.WriteFile(filepath.Join(cfg.ConfDir, "slownet.conflist"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	pn := newPod(t, cfg, "slownet")
	killSetup(t, cfg, pn, marker, false)
	if err := Teardown(context.Background(), cfg, pn.Dir); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// an ADD still running finishes within a few of its polls
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(state, pn.UUID)); err == nil {
		t.Fatalf("the ADD of the killed Setup created its resource after Teardown")
	}
}

// TestTeardownNetNSGone: the namespace vanished before Teardown (a reboot,
// or someone unmounted it): plugins cannot find the pod's interface, yet
// Teardown releases the address and removes the iptables rules.
func TestTeardownNetNSGone(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()
	// A named network whose bridge plugin masquerades per pod.
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"masq","plugins":[{"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":true,"ipam":{"type":"host-local","subnet":%q}}]}`, cfg.DefaultBridge, cfg.DefaultSubnet)
	if err := os.WriteFile(filepath.Join(cfg.ConfDir, "masq.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	pn := newPod(t, cfg, "masq")
	pn.Ports = []schema.PortMapping{{ContainerPort: 80, HostPort: freePort(t)}}
	res, err := Setup(ctx, cfg, pn)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if err := removeNetNS(res.NetNS); err != nil {
		t.Fatal(err)
	}
	// The kernel destroys an unreferenced namespace (and the veth) lazily.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, _ := exec.Command("ip", "-o", "link", "show", "master", cfg.DefaultBridge).Output()
		if len(strings.TrimSpace(string(out))) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("veth outlives its namespace: %s", out)
		}
	}
	left := strings.Join(hostLeftovers(t, cfg, pn, cfg.DefaultBridge), "\n")
	if !strings.Contains(left, "iptables:") || !strings.Contains(left, "ipam:") {
		t.Fatalf("expected rules and reservation before Teardown, got:\n%s", left)
	}
	chains := taggedChains(t, pn.UUID)
	if len(chains) < 2 {
		t.Fatalf("expected a masquerade and a DNAT chain for the pod, got %v", chains)
	}
	if err := Teardown(ctx, cfg, pn.Dir); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	if left := hostLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
		t.Fatalf("after Teardown: %v", left)
	}
	out, _ := exec.Command("iptables-save", "-t", "nat").Output()
	for _, c := range chains {
		if strings.Contains(string(out), ":"+c+" ") {
			t.Errorf("chain %s left after Teardown", c)
		}
	}
}

// taggedChains returns the per-pod chains that rules tagged with uuid jump to.
func taggedChains(t *testing.T, uuid string) []string {
	t.Helper()
	out, err := exec.Command("iptables-save", "-t", "nat").Output()
	if err != nil {
		t.Fatal(err)
	}
	var chains []string
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.Contains(l, uuid) {
			continue
		}
		args := splitRule(l)
		if n := len(args); n > 2 && args[n-2] == "-j" && !sharedChains[args[n-1]] {
			chains = append(chains, args[n-1])
		}
	}
	return chains
}

func TestSplitRule(t *testing.T) {
	line := `-A POSTROUTING -s 10.0.0.2/32 -m comment --comment "name: \"default\" id: \"abc\"" -j CNI-123`
	want := []string{"-A", "POSTROUTING", "-s", "10.0.0.2/32", "-m", "comment", "--comment", `name: "default" id: "abc"`, "-j", "CNI-123"}
	if got := splitRule(line); !reflect.DeepEqual(got, want) {
		t.Fatalf("splitRule = %q", got)
	}
}

// podChains names the chains as the installed plugins do: bridge's
// masquerade chain and portmap's DNAT chain of a pod set up on a network
// with both.
func TestPodChainsNames(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"masq","plugins":[{"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":true,"ipam":{"type":"host-local","subnet":%q}},{"type":"portmap","capabilities":{"portMappings":true}}]}`, cfg.DefaultBridge, cfg.DefaultSubnet)
	if err := os.WriteFile(filepath.Join(cfg.ConfDir, "masq.conflist"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	pn := newPod(t, cfg, "masq")
	pn.Ports = []schema.PortMapping{{ContainerPort: 80, HostPort: freePort(t)}}
	if _, err := Setup(ctx, cfg, pn); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	t.Cleanup(func() {
		if err := Teardown(ctx, cfg, pn.Dir); err != nil {
			t.Errorf("Teardown: %v", err)
		}
	})
	var made []string
	for _, c := range taggedChains(t, pn.UUID) {
		if strings.HasPrefix(c, "CNI-") {
			made = append(made, c)
		}
	}
	own := podChains(pn.UUID, []string{"masq"})
	if len(made) != 2 {
		t.Fatalf("the plugins made chains %v, want bridge's and portmap's", made)
	}
	for _, c := range made {
		if !own[c] {
			t.Errorf("chain %s the plugins made is not among the pod's by name %v", c, own)
		}
	}
}

// An ADD killed after it made the pod's chains and before the tagged rules
// that jump to them leaves chains that only their names tie to the pod:
// the sweep removes them, empty or holding tagged rules.
func TestSweepUntaggedPodChains(t *testing.T) {
	requireRoot(t)
	uuid := fmt.Sprintf("5eedc4a1-0000-4000-8000-%012x", time.Now().UnixNano()&0xffffffffffff)
	own := podChains(uuid, []string{"aud"})
	var masq, dnat string
	for c := range own {
		switch {
		case strings.HasPrefix(c, "CNI-DN-"):
			dnat = c
		case !strings.HasPrefix(c, "CNI-SN-"):
			masq = c
		}
	}
	ipt := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("iptables", append([]string{"-w", "-t", "nat"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("iptables %v: %v: %s", args, err, out)
		}
	}
	ipt("-N", masq)
	ipt("-A", masq, "-d", "10.231.9.0/24", "-j", "ACCEPT", "-m", "comment", "--comment", fmt.Sprintf(`name: "aud" id: %q`, uuid))
	ipt("-N", dnat)
	t.Cleanup(func() {
		for _, c := range []string{masq, dnat} {
			exec.Command("iptables", "-w", "-t", "nat", "-F", c).Run()
			exec.Command("iptables", "-w", "-t", "nat", "-X", c).Run()
		}
	})
	if err := sweepIPTables(context.Background(), uuid, []string{"aud"}); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("iptables-save", "-t", "nat").Output()
	for _, c := range []string{masq, dnat} {
		if strings.Contains(string(out), ":"+c+" ") {
			t.Errorf("chain %s left after the sweep", c)
		}
	}
}
