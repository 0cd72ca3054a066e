package networking

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func ipRun(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// bridgeAddrs returns the IPv4 addresses (CIDR) of a link.
func bridgeAddrs(t testing.TB, name string) []string {
	t.Helper()
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		t.Fatalf("bridge %s: %v", name, err)
	}
	addrs, _ := ifc.Addrs()
	var out []string
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			out = append(out, ipn.String())
		}
	}
	return out
}

// staleBridge creates bridge with the gateway address of another subnet, as
// the pods of an earlier pod CIDR leave it.
func staleBridge(t testing.TB, bridge, otherSubnet string) string {
	t.Helper()
	gw, err := gatewayOf(otherSubnet)
	if err != nil {
		t.Fatal(err)
	}
	ipRun(t, "link", "add", bridge, "type", "bridge")
	t.Cleanup(func() { deleteLink(bridge) })
	ipRun(t, "addr", "add", gw.String(), "dev", bridge)
	ipRun(t, "link", "set", bridge, "up")
	return gw.String()
}

// dialPod checks that the host reaches a server in the pod's namespace.
func dialPod(t testing.TB, res *Result, tag string) {
	t.Helper()
	echoServer(t, res.NetNS, ":8080", tag)
	c, err := net.DialTimeout("tcp", net.JoinHostPort(res.PodIPs()[0], "8080"), 5*time.Second)
	if err != nil {
		t.Fatalf("dial pod %s from the host: %v", tag, err)
	}
	if got := readConn(t, c); got != "hello from "+tag {
		t.Fatalf("pod %s answered %q", tag, got)
	}
}

// TestDefaultNetworkStaleBridge: a bridge left with the gateway of another
// subnet by pods that are gone (a changed pod CIDR, an older rkt) does not
// block the default network: it is reconfigured before the pod's ADD.
func TestDefaultNetworkStaleBridge(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	_, other := testNet(t.Name() + "/old")
	old := staleBridge(t, cfg.DefaultBridge, other)
	res, err := Setup(context.Background(), cfg, newPod(t, cfg, ""))
	if err != nil {
		t.Fatalf("Setup on a bridge left with %s: %v", old, err)
	}
	gw, _ := gatewayOf(cfg.DefaultSubnet)
	if got := bridgeAddrs(t, cfg.DefaultBridge); len(got) != 1 || got[0] != gw.String() {
		t.Errorf("bridge %s has addresses %v, want only %s", cfg.DefaultBridge, got, gw)
	}
	dialPod(t, res, "pod")
}

// TestDefaultNetworkBridgeInUse: a bridge with another subnet's gateway that
// still has interfaces (pods) on it is left alone, and the error says why.
func TestDefaultNetworkBridgeInUse(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	_, other := testNet(t.Name() + "/old")
	old := staleBridge(t, cfg.DefaultBridge, other)
	port := "d" + cfg.DefaultBridge[3:] // a stand-in for a pod's veth
	ipRun(t, "link", "add", port, "type", "veth", "peer", "name", port+"p")
	t.Cleanup(func() { deleteLink(port) })
	ipRun(t, "link", "set", port, "master", cfg.DefaultBridge)
	_, err := Setup(context.Background(), cfg, newPod(t, cfg, ""))
	if err == nil || !strings.Contains(err.Error(), "still on it") {
		t.Fatalf("Setup on a used bridge of another subnet: %v, want an error saying it is used", err)
	}
	if got := bridgeAddrs(t, cfg.DefaultBridge); len(got) != 1 || got[0] != old {
		t.Errorf("bridge %s has addresses %v, want still %s", cfg.DefaultBridge, got, old)
	}
	if out, _ := exec.Command("ip", "-o", "link", "show", "master", cfg.DefaultBridge).Output(); !strings.Contains(string(out), port) {
		t.Errorf("%s was taken off the bridge", port)
	}
}

// TestDefaultNetworkPerSubnetBridges: the CLI's pods on their default
// subnet and the CRI's pods on the kubelet's pod CIDR (SetDefaultSubnet),
// on one host at the same time, each get a bridge of their subnet and
// both work; so do the pods of a new pod CIDR next to those of the old.
func TestDefaultNetworkPerSubnetBridges(t *testing.T) {
	requireRoot(t)
	_, cliSubnet := testNet(t.Name() + "/cli")
	_, podCIDR := testNet(t.Name() + "/cri")
	_, newCIDR := testNet(t.Name() + "/cri-new")
	restoreSysctl(t, "/proc/sys/net/ipv4/ip_forward")
	data := t.TempDir()
	cli := Config{DataDir: t.TempDir(), ConfDir: t.TempDir(), DefaultSubnet: cliSubnet}
	cri := Config{DataDir: data, ConfDir: t.TempDir()}
	ctx := context.Background()
	for _, s := range []string{cliSubnet, podCIDR, newCIDR} {
		cfg := Config{DataDir: data, DefaultSubnet: s}
		t.Cleanup(func() {
			if err := RemoveDefaultNetwork(context.Background(), cfg); err != nil {
				t.Errorf("remove default network: %v", err)
			}
		})
	}
	if err := SetDefaultSubnet(cri, podCIDR); err != nil {
		t.Fatal(err)
	}
	cliPod, err := Setup(ctx, cli, newPod(t, cli, ""))
	if err != nil {
		t.Fatalf("Setup of a CLI pod on %s: %v", cliSubnet, err)
	}
	criPod, err := Setup(ctx, cri, newPod(t, cri, ""))
	if err != nil {
		t.Fatalf("Setup of a CRI pod on %s next to a CLI pod on %s: %v", podCIDR, cliSubnet, err)
	}
	if err := SetDefaultSubnet(cri, newCIDR); err != nil {
		t.Fatal(err)
	}
	newPodRes, err := Setup(ctx, cri, newPod(t, cri, ""))
	if err != nil {
		t.Fatalf("Setup of a CRI pod on the new pod CIDR %s: %v", newCIDR, err)
	}
	bridges := map[string]bool{}
	for _, r := range []*Result{cliPod, criPod, newPodRes} {
		data := string(r.Networks[0].ConfList)
		i := strings.Index(data, `"bridge":"`)
		bridges[data[i:i+strings.Index(data[i+10:], `"`)+10]] = true
	}
	if len(bridges) != 3 {
		t.Errorf("pods on 3 subnets use bridges %v, want 3", bridges)
	}
	for _, s := range []string{podCIDR, newCIDR} {
		if b := cri.bridgeFor(s); strings.Contains(b, "/") || len(b) > 15 {
			t.Errorf("bridge name %q for %s is not a valid interface name", b, s)
		}
	}
	dialPod(t, cliPod, "cli")
	dialPod(t, criPod, "cri")
	dialPod(t, newPodRes, "cri-new")
}

func TestBridgeFor(t *testing.T) {
	for _, tc := range []struct {
		cfg    Config
		subnet string
		want   string
	}{
		{Config{}, DefaultSubnet, DefaultBridge},
		{Config{}, "10.100.0.0/24", "rkt-0a640000-24"},
		{Config{}, "192.168.255.0/30", "rkt-c0a8ff00-30"},
		{Config{DefaultBridge: "br9"}, "10.100.0.0/24", "br9"},
	} {
		if got := tc.cfg.bridgeFor(tc.subnet); got != tc.want {
			t.Errorf("bridgeFor(%q) with %+v = %q, want %q", tc.subnet, tc.cfg, got, tc.want)
		}
	}
}
