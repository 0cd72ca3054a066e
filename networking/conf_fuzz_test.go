package networking

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/containernetworking/cni/libcni"
)

// FuzzNetworkConfig reads an arbitrary network config file as the
// kubelet-service does (its network, its readiness, the conflist a pod
// runs): configs may be refused, never panic, and an accepted one parses
// as a conflist of that name, with portmap when ports are published.
func FuzzNetworkConfig(f *testing.F) {
	f.Add([]byte(`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"bridge","bridge":"b0","ipam":{"type":"host-local","ranges":[[{"subnet":"10.1.0.0/24"}]]}},{"type":"portmap","capabilities":{"portMappings":true}}]}`), ".conflist")
	f.Add([]byte(`{"cniVersion":"0.4.0","name":"n","type":"bridge","ipam":{"type":"host-local","dataDir":"/x"}}`), ".conf")
	f.Add([]byte(`{"name":"n","plugins":[{"type":"ptp","ipam":null},7,{"capabilities":[]}]}`), ".json")
	f.Add([]byte(`{"name":7,"type":"bridge"}`), ".conf")
	f.Add([]byte(`{"name":"n","plugins":{"type":"bridge"}}`), ".conflist")
	f.Fuzz(func(t *testing.T, conf []byte, ext string) {
		if !slices.Contains(confExtensions, ext) {
			return
		}
		cfg := Config{ConfDir: t.TempDir(), DataDir: t.TempDir(), DefaultSubnet: "10.99.0.0/24"}
		if err := os.WriteFile(filepath.Join(cfg.ConfDir, "10-fuzz"+ext), conf, 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, _ = networkReady(cfg)
		name, err := CRINetwork(cfg)
		if err != nil {
			return
		}
		for _, withPorts := range []bool{false, true} {
			data, _, err := networkConfList(cfg, name, withPorts)
			if err != nil {
				continue
			}
			list, err := libcni.ConfListFromBytes(data)
			if err != nil {
				t.Fatalf("an accepted config does not parse: %v\n%s", err, data)
			}
			if list.Name != name {
				t.Fatalf("network %q runs the conflist of %q", name, list.Name)
			}
			hasPortmap := false
			for _, p := range list.Plugins {
				if p.Network.Capabilities["portMappings"] {
					hasPortmap = true
				}
			}
			if withPorts && !hasPortmap {
				t.Fatalf("network %q publishes ports without a portMappings plugin:\n%s", name, data)
			}
			if _, err := pluginTypes(data); err != nil {
				t.Fatalf("the plugins of an accepted config: %v", err)
			}
		}
	})
}
