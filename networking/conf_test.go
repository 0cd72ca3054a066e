package networking

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/confdir"
	"github.com/rkt/rkt/pkg/schema"
)

func TestParseNetList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{"", []string{"default"}, false},
		{"default", []string{"default"}, false},
		{"host", []string{"host"}, false},
		{"none", []string{"none"}, false},
		{"a, b,c", []string{"a", "b", "c"}, false},
		{"a,a", nil, true},
		{"a,,b", nil, true},
		{"host,a", nil, true},
		{"a,none", nil, true},
	}
	for _, tt := range tests {
		got, err := parseNetList(tt.in)
		if (err != nil) != tt.err || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseNetList(%q) = %v, %v; want %v, err %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// decodeList decodes conflist bytes into plugins as maps.
func decodeList(t *testing.T, data []byte) (map[string]interface{}, []map[string]interface{}) {
	t.Helper()
	var list map[string]interface{}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	var plugins []map[string]interface{}
	for _, p := range list["plugins"].([]interface{}) {
		plugins = append(plugins, p.(map[string]interface{}))
	}
	return list, plugins
}

func TestDefaultConfList(t *testing.T) {
	cfg := Config{DataDir: "/data", DefaultBridge: "br9", DefaultSubnet: "10.9.0.0/16"}
	for _, withPorts := range []bool{false, true} {
		data, builtin, err := networkConfList(cfg, DefaultNetworkName, withPorts)
		if err != nil || !builtin {
			t.Fatal(builtin, err)
		}
		list, plugins := decodeList(t, data)
		if list["name"] != "default" || list["cniVersion"] != CNIVersion {
			t.Errorf("list header %v", list)
		}
		br := plugins[0]
		ipam := br["ipam"].(map[string]interface{})
		if br["type"] != "bridge" || br["bridge"] != "br9" || br["ipMasq"] != false || br["isGateway"] != true ||
			ipam["dataDir"] != "/data/networks/ipam" || !strings.Contains(string(data), `"subnet":"10.9.0.0/16"`) {
			t.Errorf("bridge plugin %v", br)
		}
		if hasPortmap := len(plugins) == 2 && plugins[1]["type"] == "portmap" && plugins[1]["snat"] == true; hasPortmap != withPorts {
			t.Errorf("withPorts=%v: plugins %v", withPorts, plugins)
		}
	}
	if _, _, err := networkConfList(Config{DefaultSubnet: "nonsense"}, DefaultNetworkName, false); err == nil {
		t.Errorf("invalid subnet accepted")
	}
}

func TestNamedConfList(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: "/data", ConfDir: dir}
	writeBridgeConf(t, dir, "10-single.conf", "single", "br-s", "10.1.0.0/24")
	pm := `{"cniVersion":"1.0.0","name":"withpm","plugins":[{"type":"ptp","ipam":{"type":"host-local","subnet":"10.2.0.0/24","dataDir":"/elsewhere"}},{"type":"portmap","capabilities":{"portMappings":true}}]}`
	if err := os.WriteFile(filepath.Join(dir, "20-withpm.conflist"), []byte(pm), 0o644); err != nil {
		t.Fatal(err)
	}

	data, builtin, err := networkConfList(cfg, "single", true)
	if err != nil || builtin {
		t.Fatal(builtin, err)
	}
	list, plugins := decodeList(t, data)
	if list["name"] != "single" || len(plugins) != 2 || plugins[0]["type"] != "bridge" || plugins[1]["type"] != "portmap" {
		t.Errorf("single conf as list with portmap: %s", data)
	}
	if plugins[0]["ipam"].(map[string]interface{})["dataDir"] != "/data/networks/ipam" {
		t.Errorf("dataDir not injected: %s", data)
	}

	data, _, err = networkConfList(cfg, "withpm", true)
	if err != nil {
		t.Fatal(err)
	}
	_, plugins = decodeList(t, data)
	if len(plugins) != 2 || plugins[0]["ipam"].(map[string]interface{})["dataDir"] != "/elsewhere" {
		t.Errorf("conflist with its own portmap and dataDir changed: %s", data)
	}

	if _, _, err := networkConfList(cfg, "missing", false); !errors.Is(err, ErrNetworkNotFound) {
		t.Errorf("missing network: %v", err)
	}

	// A config named "default" replaces the built-in default network.
	writeBridgeConf(t, dir, "30-mydefault.conf", DefaultNetworkName, "br-d", "10.3.0.0/24")
	data, builtin, err = networkConfList(cfg, DefaultNetworkName, false)
	if err != nil || builtin || !strings.Contains(string(data), "br-d") {
		t.Errorf("overridden default: builtin=%v err=%v %s", builtin, err, data)
	}
}

func TestDefaultSubnet(t *testing.T) {
	cfg := Config{DataDir: t.TempDir()}
	check := func(want string) {
		t.Helper()
		if got, err := DefaultNetworkSubnet(cfg); err != nil || got != want {
			t.Fatalf("DefaultNetworkSubnet = %q, %v; want %q", got, err, want)
		}
	}
	check(DefaultSubnet)
	if err := SetDefaultSubnet(cfg, "10.88.1.7/16"); err != nil {
		t.Fatal(err)
	}
	check("10.88.0.0/16")
	if err := SetDefaultSubnet(cfg, "fd00:10::/64, 10.66.0.0/24"); err != nil {
		t.Fatal(err)
	}
	check("10.66.0.0/24")
	if err := SetDefaultSubnet(cfg, "10.88.1.7/16"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"10.0.0.1", "10.0.0.0/31", "x", "fd00::/64", "fd00::/64,fd01::/64"} {
		if err := SetDefaultSubnet(cfg, bad); err == nil {
			t.Errorf("SetDefaultSubnet(%q) accepted", bad)
		}
	}
	check("10.88.0.0/16")
	cfg2 := cfg
	cfg2.DefaultSubnet = "192.168.5.0/24"
	if got, _ := DefaultNetworkSubnet(cfg2); got != "192.168.5.0/24" {
		t.Errorf("explicit subnet ignored: %s", got)
	}
	if err := SetDefaultSubnet(cfg, ""); err != nil {
		t.Fatal(err)
	}
	check(DefaultSubnet)
}

func TestResultHelpers(t *testing.T) {
	r := &Result{Networks: []NetworkResult{
		{IPs: []IPConfig{{Address: "fd00::5/64"}, {Address: "10.0.0.5/24"}}, DNS: schema.DNS{Servers: []string{"10.0.0.1"}, Searches: []string{"a"}}},
		{IPs: []IPConfig{{Address: "10.1.0.5/24"}}, DNS: schema.DNS{Servers: []string{"10.0.0.1", "10.1.0.1"}, Options: []string{"ndots:2"}}},
	}}
	if got := r.PodIPs(); !reflect.DeepEqual(got, []string{"10.0.0.5", "10.1.0.5", "fd00::5"}) {
		t.Errorf("PodIPs = %v", got)
	}
	want := schema.DNS{Servers: []string{"10.0.0.1", "10.1.0.1"}, Searches: []string{"a"}, Options: []string{"ndots:2"}}
	if got := r.DNS(); !reflect.DeepEqual(got, want) {
		t.Errorf("DNS = %+v", got)
	}
	var nilRes *Result
	if nilRes.PodIPs() != nil {
		t.Errorf("nil result has IPs")
	}
}

// TestConfFIFORefused: a FIFO among the network configs fails the read at
// once (it would block every pod's network setup).
func TestConfFIFORefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "10-x.conflist")
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := readConfList(p); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, confdir.ErrNotRegular) {
			t.Errorf("readConfList: %v, want ErrNotRegular", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("readConfList blocks on a FIFO")
	}
}

// TestCRINetworkNamedHost: the CRI's pod network is the name of the first
// config in the conf dir, which Begin then reads as a network list: a
// config named "host" or "none" is refused (the network is not ready),
// not taken for the special network of that name.
func TestCRINetworkNamedHost(t *testing.T) {
	for _, name := range []string{"host", "none"} {
		t.Run(name, func(t *testing.T) {
			cfg := Config{DataDir: t.TempDir(), ConfDir: t.TempDir(), PluginDirs: []string{linkPlugins(t, "bridge", "host-local")}}
			conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,"type":"bridge","bridge":"audx0","ipam":{"type":"host-local","subnet":"10.231.250.0/24"}}`, name)
			if err := os.WriteFile(filepath.Join(cfg.ConfDir, "10-net.conf"), []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			if ok, why := networkReadyUncached(cfg); !ok {
				t.Logf("refused: %s", why) // RunPodSandbox refuses it too
				return
			}
			net, err := CRINetwork(cfg)
			if err != nil {
				t.Fatal(err)
			}
			names, err := parseNetList(net)
			if err != nil {
				t.Fatal(err)
			}
			if names[0] == NetHost || names[0] == NetNone {
				t.Errorf("the CRI pod network, configured as a bridge network named %q, is taken for the special network %q", name, names[0])
			}
		})
	}
}

func networkReadyUncached(cfg Config) (bool, string) {
	ok, why, _ := networkReady(cfg)
	return ok, why
}
