package networking

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBrokenCacheEntryDel: a libcni cache entry cut short during an ADD
// still gets its DEL, with the network's config of now, so a plugin that
// keeps state of its own (a dhcp lease) releases it; on teardown with the
// pod's net-info.json lost too, and on GC of a vanished pod. The entry is
// removed after; a network no longer configured only loses its entry.
func TestBrokenCacheEntryDel(t *testing.T) {
	requireRoot(t)
	for _, tc := range []struct {
		path       string
		configured bool
	}{{"teardown", true}, {"gc", true}, {"teardown", false}, {"gc", false}} {
		t.Run(fmt.Sprintf("%s/configured=%v", tc.path, tc.configured), func(t *testing.T) {
			cfg := testConfig(t)
			pluginDir, out := t.TempDir(), t.TempDir()
			script := fmt.Sprintf(`#!/bin/sh
case "$CNI_COMMAND" in
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["1.0.0"]}'; exit 0 ;;
esac
echo "$CNI_CONTAINERID $CNI_IFNAME" >> %[1]s/$CNI_COMMAND
[ "$CNI_COMMAND" = ADD ] && echo '{"cniVersion":"1.0.0"}'
exit 0
`, out)
			if err := os.WriteFile(filepath.Join(pluginDir, "lease"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			cfg.PluginDirs = append([]string{pluginDir}, cfg.pluginDirs()...)
			conf := filepath.Join(cfg.ConfDir, "lease.conflist")
			if err := os.WriteFile(conf, []byte(`{"cniVersion":"1.0.0","name":"lease","plugins":[{"type":"lease"}]}`), 0o644); err != nil {
				t.Fatal(err)
			}
			pn := newPod(t, cfg, "lease")
			ctx := context.Background()
			if _, err := Setup(ctx, cfg, pn); err != nil {
				t.Fatalf("Setup: %v", err)
			}
			entry := filepath.Join(cfg.cacheDir(), "results", "lease-"+pn.UUID+"-eth0")
			if err := os.WriteFile(entry, []byte(`{"kind":"cniCacheV1","contai`), 0o600); err != nil {
				t.Fatal(err)
			}
			if !tc.configured {
				if err := os.Remove(conf); err != nil {
					t.Fatal(err)
				}
			}
			switch tc.path {
			case "teardown":
				if err := os.WriteFile(filepath.Join(pn.Dir, "net-info.json"), []byte(`{"uuid":"`), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := Teardown(ctx, cfg, pn.Dir); err != nil {
					t.Fatalf("Teardown: %v", err)
				}
			case "gc":
				if err := GC(ctx, cfg, func(string) bool { return false }); err != nil {
					t.Fatalf("GC: %v", err)
				}
			}
			dels, err := os.ReadFile(filepath.Join(out, "DEL"))
			switch {
			case tc.configured && err != nil:
				t.Fatalf("the plugin got no DEL: %v", err)
			case tc.configured && strings.TrimSpace(string(dels)) != pn.UUID+" eth0":
				t.Errorf("DELs = %q, want one of %s eth0", dels, pn.UUID)
			case !tc.configured && err == nil:
				t.Errorf("a DEL ran without a config: %q", dels)
			}
			if _, err := os.Stat(entry); !os.IsNotExist(err) {
				t.Errorf("the cache entry is left: %v", err)
			}
		})
	}
}
