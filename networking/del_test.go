package networking

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/tests/testutil"
)

// TestTeardownNATGone: the pod's NAT rules were removed behind the
// plugins' back (iptables flushed, an earlier teardown cut short): the
// bridge plugin's DEL fails on its missing chain, yet Teardown succeeds and
// leaves nothing (veth, address, rules, netns, cache).
func TestTeardownNATGone(t *testing.T) {
	requireRoot(t)
	for _, tt := range []struct {
		name     string
		onlyMasq bool
	}{
		{"masquerade-chain", true},
		{"every-pod-rule", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			ctx := context.Background()
			conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"masq","plugins":[{"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":true,"ipam":{"type":"host-local","subnet":%q}},{"type":"portmap","capabilities":{"portMappings":true},"snat":true}]}`, cfg.DefaultBridge, cfg.DefaultSubnet)
			if err := os.WriteFile(filepath.Join(cfg.ConfDir, "masq.conflist"), []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			pn := newPod(t, cfg, "masq")
			pn.Ports = []schema.PortMapping{{ContainerPort: 80, HostPort: freePort(t)}}
			if _, err := Setup(ctx, cfg, pn); err != nil {
				t.Fatalf("Setup: %v", err)
			}
			testutil.RemovePodNAT(t, pn.UUID, tt.onlyMasq)
			if err := Teardown(ctx, cfg, pn.Dir); err != nil {
				t.Fatalf("Teardown: %v", err)
			}
			if left := hostLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
				t.Fatalf("after Teardown: %v", left)
			}
		})
	}
}

// TestTeardownCorruptInfo: a net-info.json cut short (its last save is
// not synced) does not keep the pod's network forever: Teardown falls back
// to libcni's cache as when the file is missing, and leaves nothing.
func TestTeardownCorruptInfo(t *testing.T) {
	requireRoot(t)
	for name, data := range map[string]string{"empty": "", "cut": `{"uuid":"`} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t)
			ctx := context.Background()
			pn := newPod(t, cfg, "default")
			pn.Ports = []schema.PortMapping{{ContainerPort: 80, HostPort: freePort(t)}}
			if _, err := Setup(ctx, cfg, pn); err != nil {
				t.Fatalf("Setup: %v", err)
			}
			if err := os.WriteFile(schema.PodDir(pn.Dir).NetInfo(), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := Teardown(ctx, cfg, pn.Dir); err != nil {
				t.Fatalf("Teardown with a corrupt net-info.json: %v", err)
			}
			if left := hostLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
				t.Fatalf("after Teardown: %v", left)
			}
		})
	}
}

// TestTeardownDELErrors: a DEL that fails because what it removes is
// already gone counts as done; any other failure stays an error, and the
// pod's network is kept for a retry.
func TestTeardownDELErrors(t *testing.T) {
	requireRoot(t)
	for _, tt := range []struct {
		name, out string
		wantErr   bool
	}{
		{"chain-gone", `{"cniVersion":"1.0.0","code":999,"msg":"running [iptables -t nat -D POSTROUTING -j CNI-1]: exit status 2: iptables v1.8.9 (nf_tables): Chain 'CNI-1' does not exist"}`, false},
		{"unknown-container", `{"cniVersion":"1.0.0","code":3,"msg":"no such container"}`, false},
		{"permission", `{"cniVersion":"1.0.0","code":999,"msg":"cannot remove rule: permission denied"}`, true},
		{"try-again", `{"cniVersion":"1.0.0","code":11,"msg":"busy"}`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			dir := t.TempDir()
			script := fmt.Sprintf(`#!/bin/sh
case "$CNI_COMMAND" in
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["1.0.0"]}' ;;
ADD) echo '{"cniVersion":"1.0.0"}' ;;
DEL) [ -e %[1]q ] && exit 0; echo %[2]q; exit 1 ;;
esac
exit 0
`, filepath.Join(dir, "fixed"), tt.out)
			if err := os.WriteFile(filepath.Join(dir, "faildel"), []byte(script), 0o700); err != nil {
				t.Fatal(err)
			}
			cfg.PluginDirs = append([]string{dir}, cfg.pluginDirs()...)
			conf := `{"cniVersion":"1.0.0","name":"faildel","plugins":[{"type":"faildel"}]}`
			if err := os.WriteFile(filepath.Join(cfg.ConfDir, "faildel.conflist"), []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			pn := newPod(t, cfg, "faildel")
			ctx := context.Background()
			if _, err := Setup(ctx, cfg, pn); err != nil {
				t.Fatalf("Setup: %v", err)
			}
			err := Teardown(ctx, cfg, pn.Dir)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Teardown = %v, want an error: %v", err, tt.wantErr)
			}
			if err == nil {
				if left := hostLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
					t.Fatalf("after Teardown: %v", left)
				}
				return
			}
			if _, lerr := Load(pn.Dir); lerr != nil || !isNetNS(schema.PodDir(pn.Dir).NetNS()) {
				t.Fatalf("after a failed Teardown the network info (%v) or netns is gone", lerr)
			}
			if err := os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := Teardown(ctx, cfg, pn.Dir); err != nil {
				t.Fatalf("Teardown after the DEL was fixed: %v", err)
			}
		})
	}
}

// TestTeardownPortmapUninstalled: a plugin missing at teardown is skipped
// (installedPlugins), and what it set up goes all the same: portmap's DNAT
// rules would keep forwarding the host port to the pod's address after the
// pod is gone (to the next pod given that address).
func TestTeardownPortmapUninstalled(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()
	pn := setupThenUninstall(t, &cfg, []string{"bridge", "host-local", "portmap"}, true, "portmap")
	terr := Teardown(ctx, cfg, pn.Dir)
	left := hostLeftovers(t, cfg, pn, cfg.DefaultBridge)
	_ = sweepIPTables(ctx, pn.UUID, []string{"default"}) // clean up for the next tests
	if terr != nil {
		t.Fatalf("Teardown: %v", terr)
	}
	if len(left) > 0 {
		t.Errorf("left after Teardown with portmap uninstalled:\n%s", strings.Join(left, "\n"))
	}
}

// TestTeardownIPAMUninstalled: a plugin whose IPAM plugin is missing is
// skipped too (it delegates its DEL to it, which would fail forever).
func TestTeardownIPAMUninstalled(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	pn := setupThenUninstall(t, &cfg, []string{"bridge", "host-local"}, false, "host-local")
	if err := Teardown(context.Background(), cfg, pn.Dir); err != nil {
		// clean up for the next tests: reinstall and tear down
		_ = os.Symlink(mustFindPlugin(t, "host-local"), filepath.Join(cfg.PluginDirs[0], "host-local"))
		_ = Teardown(context.Background(), cfg, pn.Dir)
		t.Fatalf("Teardown with the IPAM plugin uninstalled: %v", err)
	}
	if left := settledLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
		t.Errorf("left after Teardown with host-local uninstalled:\n%s", strings.Join(left, "\n"))
	}
}
