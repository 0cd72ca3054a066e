package networking

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"

	"github.com/rkt/rkt/pkg/schema"
)

// requireRoot skips tests that create namespaces, bridges and iptables rules
// when not root or when the CNI plugins are missing.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := findPlugin(Config{}, "bridge"); err != nil {
		t.Skipf("needs CNI plugins: %v", err)
	}
}

// testNet derives a bridge name and a /24 subnet unique to the test name,
// in 10.100-149.x.0 (the functional tests in tests/ use 10.200-249).
func testNet(name string) (bridge, subnet string) {
	h := sha256.Sum256([]byte(name))
	return fmt.Sprintf("rkt%x", h[:4]), fmt.Sprintf("10.%d.%d.0/24", 100+int(h[4])%50, h[5])
}

// testConfig returns a Config with its own data dir, bridge and subnet, and
// registers cleanups that remove the bridge and restore ip_forward.
func testConfig(t testing.TB) Config {
	t.Helper()
	bridge, subnet := testNet(t.Name())
	restoreSysctl(t, "/proc/sys/net/ipv4/ip_forward")
	cfg := Config{
		DataDir:       t.TempDir(),
		ConfDir:       t.TempDir(),
		DefaultBridge: bridge,
		DefaultSubnet: subnet,
	}
	t.Cleanup(func() {
		if err := RemoveDefaultNetwork(context.Background(), cfg); err != nil {
			t.Errorf("remove default network: %v", err)
		}
	})
	return cfg
}

func restoreSysctl(t testing.TB, path string) {
	t.Helper()
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(path, old, 0o644); err != nil {
			t.Errorf("restore %s: %v", path, err)
		}
	})
}

func deleteLink(name string) {
	_ = exec.Command("ip", "link", "del", name).Run()
}

// newPod returns a PodNet in a fresh pod dir whose network is torn down at
// the end of the test (before the dir is removed).
func newPod(t testing.TB, cfg Config, netName string) PodNet {
	t.Helper()
	h := sha256.Sum256([]byte(fmt.Sprintf("%s-%d", t.Name(), podCounter)))
	podCounter++
	uuid := fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
	dir := filepath.Join(t.TempDir(), uuid)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := Teardown(context.Background(), cfg, dir); err != nil {
			t.Errorf("cleanup teardown: %v", err)
		}
	})
	return PodNet{UUID: uuid, Dir: dir, Net: netName}
}

var podCounter int

// inNS runs f inside the network namespace at path.
func inNS(t testing.TB, path string, f func() error) {
	t.Helper()
	if err := ns.WithNetNSPath(path, func(ns.NetNS) error { return f() }); err != nil {
		t.Fatalf("in netns %s: %v", path, err)
	}
}

// echoServer listens on addr inside the netns and answers each connection
// with "hello from <tag>" then closes it.
func echoServer(t testing.TB, netns, addr, tag string) net.Addr {
	t.Helper()
	var ln net.Listener
	inNS(t, netns, func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	})
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "hello from %s\n", tag)
			c.Close()
		}
	}()
	return ln.Addr()
}

// readAll reads what a connection sends until EOF.
func readConn(t testing.TB, c net.Conn) string {
	t.Helper()
	defer c.Close()
	buf := make([]byte, 256)
	n, _ := c.Read(buf)
	return strings.TrimSpace(string(buf[:n]))
}

// settledLeftovers is hostLeftovers once the host had up to 5 s to let go
// of the pod's veth: with its namespace gone and no plugin to delete it,
// the kernel removes it asynchronously.
func settledLeftovers(t testing.TB, cfg Config, pn PodNet, bridge string) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := hostLeftovers(t, cfg, pn, bridge)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hostLeftovers is what a pod may leave on the host: veths on the bridge,
// IPAM reservations, iptables rules mentioning the pod, libcni cache
// entries, its netns file and mounts under its directory.
func hostLeftovers(t testing.TB, cfg Config, pn PodNet, bridge string) []string {
	t.Helper()
	var left []string
	out, _ := exec.Command("ip", "-o", "link", "show", "master", bridge).CombinedOutput()
	if s := strings.TrimSpace(string(out)); s != "" && !strings.Contains(s, "does not exist") {
		left = append(left, "veth: "+s)
	}
	_ = filepath.Walk(cfg.ipamDir(), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		data, _ := os.ReadFile(p)
		if strings.Contains(string(data), pn.UUID) {
			left = append(left, "ipam: "+p)
		}
		return nil
	})
	ipt, err := exec.Command("iptables-save").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables-save: %v: %s", err, ipt)
	}
	for _, l := range strings.Split(string(ipt), "\n") {
		if strings.Contains(l, pn.UUID) {
			left = append(left, "iptables: "+l)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(cfg.cacheDir(), "results"))
	for _, e := range entries {
		if strings.Contains(e.Name(), pn.UUID) {
			left = append(left, "cache: "+e.Name())
		}
	}
	if _, err := os.Lstat(filepath.Join(pn.Dir, "netns")); err == nil {
		left = append(left, "netns file")
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), pn.Dir) {
		left = append(left, "mount under pod dir")
	}
	return left
}

// freePort returns a TCP port free on the host right now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// linkPlugins makes a plugin dir holding links to the installed plugins
// names.
func linkPlugins(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		p, err := findPlugin(Config{}, n)
		if err != nil {
			t.Skip(err)
		}
		if err := os.Symlink(p, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// mustFindPlugin is the installed plugin n.
func mustFindPlugin(t *testing.T, n string) string {
	t.Helper()
	p, err := findPlugin(Config{}, n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// setupThenUninstall sets up a pod on the default network (with a port
// mapping when ports) with only plugins installed, then uninstalls gone.
func setupThenUninstall(t *testing.T, cfg *Config, plugins []string, ports bool, gone ...string) PodNet {
	t.Helper()
	cfg.PluginDirs = []string{linkPlugins(t, plugins...)}
	pn := newPod(t, *cfg, "default")
	if ports {
		pn.Ports = []schema.PortMapping{{Protocol: "tcp", HostPort: freePort(t), ContainerPort: 80}}
	}
	if _, err := Setup(context.Background(), *cfg, pn); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	for _, n := range gone {
		if err := os.Remove(filepath.Join(cfg.PluginDirs[0], n)); err != nil {
			t.Fatal(err)
		}
	}
	return pn
}
