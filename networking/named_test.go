package networking

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeBridgeConf writes a bridge network config named name to file in dir.
// A .conf file holds a single plugin, a .conflist a list.
func writeBridgeConf(t testing.TB, dir, file, name, bridge, subnet string) {
	t.Helper()
	plugin := fmt.Sprintf(`{"type":"bridge","bridge":%q,"isGateway":true,"ipam":{"type":"host-local","subnet":%q}}`, bridge, subnet)
	var data string
	if strings.HasSuffix(file, ".conflist") {
		data = fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,"plugins":[%s]}`, name, plugin)
	} else {
		data = fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,%s`, name, plugin[1:])
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestNamedNetworks(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()
	br1, sub1 := testNet(t.Name() + "/1")
	br2, sub2 := testNet(t.Name() + "/2")
	t.Cleanup(func() { deleteLink(br1); deleteLink(br2) })
	writeBridgeConf(t, cfg.ConfDir, "20-first.conflist", "first", br1, sub1)
	writeBridgeConf(t, cfg.ConfDir, "30-second.conf", "second", br2, sub2)

	if name, err := CRINetwork(cfg); err != nil || name != "first" {
		t.Fatalf("CRINetwork = %q, %v; want first", name, err)
	}
	if ok, reason := NetworkReady(cfg); !ok {
		t.Fatalf("NetworkReady = false: %s", reason)
	}

	pn := newPod(t, cfg, "second,first")
	res, err := Setup(ctx, cfg, pn)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if len(res.Networks) != 2 || res.Networks[0].Name != "second" || res.Networks[0].IfName != "eth0" ||
		res.Networks[1].Name != "first" || res.Networks[1].IfName != "eth1" {
		t.Fatalf("bad networks %+v", res.Networks)
	}
	for i, sub := range []string{sub2, sub1} {
		_, ipnet, _ := net.ParseCIDR(sub)
		if ip := res.Networks[i].IPs[0].IP(); !ipnet.Contains(ip) {
			t.Fatalf("network %s: address %s not in %s", res.Networks[i].Name, ip, sub)
		}
	}
	// host-local keeps its reservations under our data dir.
	if _, err := os.Stat(filepath.Join(cfg.ipamDir(), "first")); err != nil {
		t.Fatalf("no IPAM state under the data dir: %v", err)
	}

	// Teardown works from the saved configs even when the files are gone.
	if err := os.RemoveAll(cfg.ConfDir); err != nil {
		t.Fatal(err)
	}
	if err := Teardown(ctx, cfg, pn.Dir); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	for _, br := range []string{br1, br2} {
		if left := hostLeftovers(t, cfg, pn, br); len(left) > 0 {
			t.Fatalf("after Teardown: %v", left)
		}
	}
}

func TestNamedNetworkMissing(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	pn := newPod(t, cfg, "nosuchnet")
	if _, err := Setup(context.Background(), cfg, pn); err == nil || !strings.Contains(err.Error(), "nosuchnet") {
		t.Fatalf("Setup of a missing network: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(pn.Dir, "net-info.json")); err == nil {
		t.Fatalf("failed Setup left net-info.json")
	}
}

func TestNetworkReady(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{ConfDir: dir, DataDir: t.TempDir(), PluginDirs: []string{t.TempDir()}}
	// An empty conf dir: the built-in default network, ready once its
	// plugins are there (a fresh install networks pods).
	if name, err := CRINetwork(cfg); err != nil || name != DefaultNetworkName {
		t.Fatalf("CRINetwork with an empty conf dir = %q, %v", name, err)
	}
	if ok, reason := NetworkReady(cfg); ok || !strings.Contains(reason, `"bridge" not found`) {
		t.Fatalf("empty conf dir without plugins: ready=%v %q", ok, reason)
	}
	// A pod CIDR from the kubelet moves the built-in default network to it.
	if err := SetDefaultSubnet(cfg, "10.77.0.0/16"); err != nil {
		t.Fatal(err)
	}
	if name, err := CRINetwork(cfg); err != nil || name != DefaultNetworkName {
		t.Fatalf("CRINetwork with a pod CIDR = %q, %v", name, err)
	}
	if ok, reason := NetworkReady(cfg); ok || !strings.Contains(reason, `"bridge" not found`) {
		t.Fatalf("default network without plugins: ready=%v %q", ok, reason)
	}
	withPlugins := cfg
	withPlugins.PluginDirs = nil
	if _, err := findPlugin(withPlugins, "bridge"); err == nil {
		if ok, reason := NetworkReady(withPlugins); !ok {
			t.Fatalf("default network on the pod CIDR not ready: %s", reason)
		}
	}
	// A plugin type naming a path outside the plugin dirs, which libcni
	// would refuse to run, does not make the network ready.
	escape := Config{ConfDir: t.TempDir(), DataDir: t.TempDir(), PluginDirs: []string{t.TempDir()}}
	escConf := `{"cniVersion":"1.0.0","name":"esc","plugins":[{"type":"../../../../usr/bin/true"}]}`
	if err := os.WriteFile(filepath.Join(escape.ConfDir, "10-esc.conflist"), []byte(escConf), 0o600); err != nil {
		t.Fatal(err)
	}
	if ok, reason := NetworkReady(escape); ok || !strings.Contains(reason, "not a file name") {
		t.Fatalf("a plugin type that is a path: ready=%v %q", ok, reason)
	}
	writeBridgeConf(t, dir, "10-net.conflist", "net", "br-x", "10.1.2.0/24")
	if name, err := CRINetwork(cfg); err != nil || name != "net" {
		t.Fatalf("a config file comes before the pod CIDR: %q, %v", name, err)
	}
	if ok, reason := NetworkReady(cfg); ok || !strings.Contains(reason, `"bridge" not found`) {
		t.Fatalf("missing plugin: ready=%v %q", ok, reason)
	}
	if err := os.WriteFile(filepath.Join(dir, "00-bad.conf"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, reason := NetworkReady(cfg); ok || !strings.Contains(reason, "00-bad.conf") {
		t.Fatalf("invalid config: ready=%v %q", ok, reason)
	}
	// The answer is kept while its inputs are unchanged: each change is
	// seen on the next call.
	if err := os.Remove(filepath.Join(dir, "00-bad.conf")); err != nil {
		t.Fatal(err)
	}
	for _, plugin := range []string{"bridge", "host-local"} {
		if err := os.WriteFile(filepath.Join(cfg.PluginDirs[0], plugin), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		if ok, reason := NetworkReady(cfg); !ok {
			t.Fatalf("plugins installed: not ready: %s", reason)
		}
	}
	conf := filepath.Join(dir, "10-net.conflist")
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte(strings.Replace(string(b), `"bridge",`, `"macvlan",`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, reason := NetworkReady(cfg); ok || !strings.Contains(reason, `"macvlan" not found`) {
		t.Fatalf("config edited in place to name a missing plugin: ready=%v %q", ok, reason)
	}
	if err := os.WriteFile(conf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(cfg.PluginDirs[0], "host-local")); err != nil {
		t.Fatal(err)
	}
	if ok, reason := NetworkReady(cfg); ok || !strings.Contains(reason, `"host-local" not found`) {
		t.Fatalf("plugin removed: ready=%v %q", ok, reason)
	}
}
