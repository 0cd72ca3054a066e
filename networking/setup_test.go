package networking

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rkt/rkt/pkg/schema"
)

func TestSetupTeardownDefault(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	pn := newPod(t, cfg, "")
	ctx := context.Background()

	res, err := Setup(ctx, cfg, pn)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if !res.Complete || res.NetNS != schema.PodDir(pn.Dir).NetNS() || !isNetNS(res.NetNS) {
		t.Fatalf("bad result %+v (netns mounted: %v)", res, isNetNS(res.NetNS))
	}
	ips := res.PodIPs()
	_, subnet, _ := net.ParseCIDR(cfg.DefaultSubnet)
	if len(ips) != 1 || !subnet.Contains(net.ParseIP(ips[0])) {
		t.Fatalf("pod IPs %v not one address in %s", ips, subnet)
	}
	if n := res.Networks[0]; n.Name != DefaultNetworkName || n.IfName != "eth0" || !n.Added || n.IPs[0].Gateway == "" {
		t.Fatalf("bad network result %+v", n)
	}
	loaded, err := Load(pn.Dir)
	if err != nil || loaded.PodIPs()[0] != ips[0] || !loaded.Complete {
		t.Fatalf("Load = %+v, %v", loaded, err)
	}

	// The host reaches a server inside the pod over the bridge, and the
	// pod has loopback and a default route.
	echoServer(t, res.NetNS, ":8080", "pod")
	c, err := net.DialTimeout("tcp", net.JoinHostPort(ips[0], "8080"), 5*time.Second)
	if err != nil {
		t.Fatalf("dial pod from host: %v", err)
	}
	if got := readConn(t, c); got != "hello from pod" {
		t.Fatalf("pod answered %q", got)
	}
	c, err = DialInNetNS(ctx, res.NetNS, "tcp", "127.0.0.1:8080")
	if err != nil {
		t.Fatalf("DialInNetNS: %v", err)
	}
	if got := readConn(t, c); got != "hello from pod" {
		t.Fatalf("pod answered %q on loopback", got)
	}

	if _, err := Setup(ctx, cfg, pn); !errors.Is(err, ErrAlreadySetUp) {
		t.Fatalf("second Setup: %v, want ErrAlreadySetUp", err)
	}

	// Outbound NAT: one rule for the subnet, kept with the bridge.
	if !masqueradePresent(ctx, cfg.DefaultSubnet) {
		t.Fatalf("no masquerade rule for %s", cfg.DefaultSubnet)
	}

	// What Teardown must remove is there now (so the check below can fail).
	before := strings.Join(hostLeftovers(t, cfg, pn, cfg.DefaultBridge), "\n")
	for _, want := range []string{"veth:", "ipam:", "cache:", "netns file", "mount under pod dir"} {
		if !strings.Contains(before, want) {
			t.Fatalf("set-up pod shows no %q in host state:\n%s", want, before)
		}
	}

	for i := 0; i < 2; i++ {
		if err := Teardown(ctx, cfg, pn.Dir); err != nil {
			t.Fatalf("Teardown #%d: %v", i+1, err)
		}
		if left := hostLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
			t.Fatalf("after Teardown #%d: %v", i+1, left)
		}
	}
	if _, err := Load(pn.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load after Teardown: %v", err)
	}
	if masqueradePresent(ctx, cfg.DefaultSubnet) {
		t.Fatalf("masquerade rule of %s outlives the last pod", cfg.DefaultSubnet)
	}
}

func TestTwoPodsTalk(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()
	a, b := newPod(t, cfg, "default"), newPod(t, cfg, "default")
	a.Args = [][2]string{{"K8S_POD_NAMESPACE", "ns"}, {"K8S_POD_NAME", "a"}} // as the CRI passes them
	ra, err := Setup(ctx, cfg, a)
	if err != nil {
		t.Fatalf("Setup a: %v", err)
	}
	rb, err := Setup(ctx, cfg, b)
	if err != nil {
		t.Fatalf("Setup b: %v", err)
	}
	if ra.PodIPs()[0] == rb.PodIPs()[0] {
		t.Fatalf("both pods got %s", ra.PodIPs()[0])
	}
	echoServer(t, ra.NetNS, ":9000", "a")
	c, err := DialInNetNS(ctx, rb.NetNS, "tcp", net.JoinHostPort(ra.PodIPs()[0], "9000"))
	if err != nil {
		t.Fatalf("dial a from b: %v", err)
	}
	if got := readConn(t, c); got != "hello from a" {
		t.Fatalf("a answered %q", got)
	}
}

func TestPublishedPort(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()
	pn := newPod(t, cfg, "default")
	hostPort := freePort(t)
	pn.Ports = []schema.PortMapping{{Protocol: "TCP", ContainerPort: 8080, HostPort: hostPort}}
	res, err := Setup(ctx, cfg, pn)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	echoServer(t, res.NetNS, ":8080", "published")
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(hostPort))
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	if got := readConn(t, c); got != "hello from published" {
		t.Fatalf("published port answered %q", got)
	}
	if err := Teardown(ctx, cfg, pn.Dir); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	if left := hostLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
		t.Fatalf("after Teardown: %v", left)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("port %s still answers after Teardown", addr)
	}
}

func TestNoneNetwork(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()
	pn := newPod(t, cfg, NetNone)
	res, err := Setup(ctx, cfg, pn)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if len(res.Networks) != 0 || !isNetNS(res.NetNS) || len(res.PodIPs()) != 0 {
		t.Fatalf("bad none result %+v", res)
	}
	var names []string
	inNS(t, res.NetNS, func() error {
		ifs, err := net.Interfaces()
		for _, i := range ifs {
			names = append(names, i.Name)
			if i.Name == "lo" && i.Flags&net.FlagUp == 0 {
				t.Errorf("lo is down")
			}
		}
		return err
	})
	if strings.Join(names, ",") != "lo" {
		t.Fatalf("interfaces in none netns: %v", names)
	}
	echoServer(t, res.NetNS, "127.0.0.1:7000", "none")
	c, err := DialInNetNS(ctx, res.NetNS, "tcp", "127.0.0.1:7000")
	if err != nil {
		t.Fatalf("loopback in none netns: %v", err)
	}
	if got := readConn(t, c); got != "hello from none" {
		t.Fatalf("got %q", got)
	}
	if err := Teardown(ctx, cfg, pn.Dir); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	if left := hostLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
		t.Fatalf("after Teardown: %v", left)
	}

	pn2 := newPod(t, cfg, NetNone)
	pn2.Ports = []schema.PortMapping{{ContainerPort: 1, HostPort: 1}}
	if _, err := Setup(ctx, cfg, pn2); err == nil {
		t.Fatalf("ports on none network accepted")
	}
}

func TestHostNetwork(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()
	pn := newPod(t, cfg, NetHost)
	res, err := Setup(ctx, cfg, pn)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if res.NetNS != "" || len(res.Networks) != 0 || !res.Complete {
		t.Fatalf("bad host result %+v", res)
	}
	if _, err := os.Lstat(schema.PodDir(pn.Dir).NetNS()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("host pod has a netns file: %v", err)
	}
	if l, err := Load(pn.Dir); err != nil || l.Net != NetHost {
		t.Fatalf("Load = %+v, %v", l, err)
	}
	for i := 0; i < 2; i++ {
		if err := Teardown(ctx, cfg, pn.Dir); err != nil {
			t.Fatalf("Teardown: %v", err)
		}
	}
	if _, err := os.Lstat(schema.PodDir(pn.Dir).NetInfo()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("net-info left: %v", err)
	}
}

// TestPodDirMoved: stage0 moves pods between state directories by rename;
// the namespace mount moves along and Teardown from the new place is
// complete.
func TestPodDirMoved(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()
	pn := newPod(t, cfg, "default")
	if _, err := Setup(ctx, cfg, pn); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	moved := filepath.Join(t.TempDir(), pn.UUID)
	if err := os.Rename(pn.Dir, moved); err != nil {
		t.Fatalf("rename pod dir: %v", err)
	}
	t.Cleanup(func() { _ = Teardown(context.Background(), cfg, moved) })
	res, err := Load(moved)
	if err != nil || res.NetNS != schema.PodDir(moved).NetNS() || !isNetNS(res.NetNS) {
		t.Fatalf("Load after move = %+v, %v", res, err)
	}
	if err := Teardown(ctx, cfg, moved); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	pn.Dir = moved
	if left := hostLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
		t.Fatalf("after Teardown: %v", left)
	}
	if masqueradePresent(ctx, cfg.DefaultSubnet) {
		t.Fatalf("masquerade rule of %s outlives the last pod", cfg.DefaultSubnet)
	}
}

// TestTeardownWithoutNetInfo: net-info.json is lost; Teardown falls back to
// libcni's cache for the pod and still removes everything.
func TestTeardownWithoutNetInfo(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()
	pn := newPod(t, cfg, "default")
	pn.Ports = []schema.PortMapping{{ContainerPort: 80, HostPort: freePort(t)}}
	if _, err := Setup(ctx, cfg, pn); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if err := os.Remove(schema.PodDir(pn.Dir).NetInfo()); err != nil {
		t.Fatal(err)
	}
	if err := Teardown(ctx, cfg, pn.Dir); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	if left := hostLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
		t.Fatalf("after Teardown: %v", left)
	}
	if masqueradePresent(ctx, cfg.DefaultSubnet) {
		t.Fatalf("masquerade rule of %s outlives the last pod", cfg.DefaultSubnet)
	}
}

// TestBeginThenAdd: Begin leaves a namespace and an incomplete net-info;
// Add completes it; a Begin followed by Teardown, or by an Add whose
// context is cancelled, leaves nothing on the host.
func TestBeginThenAdd(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()

	pn := newPod(t, cfg, "")
	ps, err := Begin(ctx, cfg, pn)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if nsPath := schema.PodDir(pn.Dir).NetNS(); !isNetNS(nsPath) {
		t.Fatalf("no network namespace at %s after Begin", nsPath)
	}
	if res, err := Load(pn.Dir); err != nil || res.Complete {
		t.Fatalf("net-info after Begin: %+v, %v; want saved, not complete", res, err)
	}
	res, err := ps.Add(ctx)
	if err != nil || !res.Complete || len(res.PodIPs()) != 1 {
		t.Fatalf("Add: %+v, %v", res, err)
	}
	if loaded, err := Load(pn.Dir); err != nil || !loaded.Complete || loaded.PodIPs()[0] != res.PodIPs()[0] {
		t.Fatalf("Load after Add = %+v, %v", loaded, err)
	}
	if err := Teardown(ctx, cfg, pn.Dir); err != nil {
		t.Fatal(err)
	}

	pn = newPod(t, cfg, "")
	if _, err := Begin(ctx, cfg, pn); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if err := Teardown(ctx, cfg, pn.Dir); err != nil {
		t.Fatalf("Teardown after Begin: %v", err)
	}
	if left := hostLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
		t.Fatalf("after Begin and Teardown: %v", left)
	}

	pn = newPod(t, cfg, "")
	if ps, err = Begin(ctx, cfg, pn); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ps.Add(cctx); err == nil {
		t.Fatal("Add with a cancelled context succeeded")
	}
	if left := hostLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
		t.Fatalf("after a failed Add: %v", left)
	}
	if _, err := Load(pn.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load after a failed Add: %v", err)
	}
	if masqueradePresent(ctx, cfg.DefaultSubnet) {
		t.Fatalf("masquerade rule of %s outlives the last pod", cfg.DefaultSubnet)
	}
}
