package networking

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
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
		// rebooted: the namespace's bind mount is gone, its empty
		// mountpoint file is left (the DEL must get no CNI_NETNS)
		rebooted bool
	}{{"teardown", true, false}, {"gc", true, false}, {"teardown", false, false}, {"gc", false, false},
		{"teardown", true, true}} {
		t.Run(fmt.Sprintf("%s/configured=%v/rebooted=%v", tc.path, tc.configured, tc.rebooted), func(t *testing.T) {
			cfg := testConfig(t)
			out := t.TempDir()
			writeScriptNetwork(t, &cfg, fmt.Sprintf(`case "$CNI_COMMAND" in `+versionCase+`
ADD) echo '{"cniVersion":"1.0.0"}' ;;
DEL) echo "$CNI_CONTAINERID $CNI_IFNAME $CNI_NETNS" >> %s/DEL ;;
esac; exit 0`, out))
			conf := filepath.Join(cfg.ConfDir, "scripted.conflist")
			pn := newPod(t, cfg, "scripted")
			ctx := context.Background()
			if _, err := Setup(ctx, cfg, pn); err != nil {
				t.Fatalf("Setup: %v", err)
			}
			entry := filepath.Join(cfg.cacheDir(), "results", "scripted-"+pn.UUID+"-eth0")
			if err := os.WriteFile(entry, []byte(`{"kind":"cniCacheV1","contai`), 0o600); err != nil {
				t.Fatal(err)
			}
			if !tc.configured {
				if err := os.Remove(conf); err != nil {
					t.Fatal(err)
				}
			}
			netns := schema.PodDir(pn.Dir).NetNS()
			if tc.rebooted {
				if err := unix.Unmount(netns, unix.MNT_DETACH); err != nil {
					t.Fatal(err)
				}
				netns = ""
			}
			if tc.path == "gc" {
				netns = "" // a vanished pod's
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
			case tc.configured && strings.TrimSpace(string(dels)) != strings.TrimSpace(pn.UUID+" eth0 "+netns):
				t.Errorf("DELs = %q, want one of %s eth0 in %q", dels, pn.UUID, netns)
			case !tc.configured && err == nil:
				t.Errorf("a DEL ran without a config: %q", dels)
			}
			if _, err := os.Stat(entry); !os.IsNotExist(err) {
				t.Errorf("the cache entry is left: %v", err)
			}
			if tc.path == "teardown" { // GC leaves the namespace, and the veth in it, to the pod's teardown
				// Without a DEL the veth goes with its namespace, asynchronously.
				if left := settledLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
					t.Errorf("left after the teardown: %v", left)
				}
			}
		})
	}
}
