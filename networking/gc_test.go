package networking

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rkt/rkt/pkg/schema"
)

// TestGC: a pod whose directory was removed by hand without Teardown loses
// its address, cache entry and iptables rules on GC; a live pod keeps all.
func TestGC(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()
	live, gone := newPod(t, cfg, "default"), newPod(t, cfg, "default")
	gone.Ports = []schema.PortMapping{{ContainerPort: 80, HostPort: freePort(t)}}
	for _, pn := range []PodNet{live, gone} {
		if _, err := Setup(ctx, cfg, pn); err != nil {
			t.Fatalf("Setup: %v", err)
		}
	}
	// A reservation whose ADD never reached the cache (killed plugin).
	orphan := filepath.Join(cfg.ipamDir(), "default", "10.250.250.250")
	if err := os.WriteFile(orphan, []byte("deadbeef-dead\r\neth0"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := removeNetNS(schema.PodDir(gone.Dir).NetNS()); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone.Dir); err != nil {
		t.Fatal(err)
	}
	if len(hostLeftovers(t, cfg, gone, cfg.DefaultBridge)) == 0 {
		t.Fatal("the removed pod left nothing to collect")
	}
	exists := func(uuid string) bool { return uuid == live.UUID }
	if err := GC(ctx, cfg, exists); err != nil {
		t.Fatalf("GC: %v", err)
	}
	for _, l := range hostLeftovers(t, cfg, gone, cfg.DefaultBridge) {
		if !strings.HasPrefix(l, "veth:") { // veths are checked below
			t.Errorf("left after GC: %s", l)
		}
	}
	// Only the live pod's veth stays (the kernel removes the other one with
	// its namespace, lazily).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, _ := exec.Command("ip", "-o", "link", "show", "master", cfg.DefaultBridge).Output()
		if n := strings.Count(strings.TrimSpace(string(out)), "\n") + 1; n == 1 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("%d veths on the bridge, want 1:\n%s", n, out)
		}
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("orphan reservation not released: %v", err)
	}
	res, err := Load(live.Dir)
	if err != nil || !isNetNS(res.NetNS) {
		t.Fatalf("live pod damaged: %v", err)
	}
	left := hostLeftovers(t, cfg, live, cfg.DefaultBridge)
	if len(left) < 3 || !masqueradePresent(ctx, cfg.DefaultSubnet) {
		t.Fatalf("GC took the live pod's resources: %v", left)
	}
	if err := Teardown(ctx, cfg, live.Dir); err != nil {
		t.Fatal(err)
	}
	if masqueradePresent(ctx, cfg.DefaultSubnet) {
		t.Fatalf("masquerade rule of %s outlives the last pod", cfg.DefaultSubnet)
	}
}

// TestGCAfterPluginsUninstalled: a network whose plugins are all missing
// at teardown still has its libcni cache entry dropped, so GC does not run
// that entry's DEL (which would fail at every run) once the pod is gone.
func TestGCAfterPluginsUninstalled(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()
	pn := setupThenUninstall(t, &cfg, []string{"bridge", "host-local"}, false, "bridge", "host-local")
	if err := Teardown(ctx, cfg, pn.Dir); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	gone := func(string) bool { return false }
	err1 := GC(ctx, cfg, gone)
	err2 := GC(ctx, cfg, gone)
	left := settledLeftovers(t, cfg, pn, cfg.DefaultBridge)
	if err1 != nil || err2 != nil || len(left) > 0 {
		t.Errorf("GC of a pod torn down with its plugins uninstalled: %v; again: %v; left: %v", err1, err2, left)
	}
}

// TestGCRemovesStaleWriteTemps: the temporary file of a write of the
// network state cut off before its rename (SetDefaultSubnet killed) is
// removed by GC once stale; a recent one, maybe still being written, and
// the state itself are kept.
func TestGCRemovesStaleWriteTemps(t *testing.T) {
	cfg := Config{DataDir: t.TempDir(), ConfDir: t.TempDir()}
	if err := SetDefaultSubnet(cfg, "10.99.0.0/24"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(cfg.subnetFile())
	stale := filepath.Join(dir, "."+subnetFile+".tmp2840184913")
	fresh := filepath.Join(dir, "."+subnetFile+".tmp117325089")
	old := time.Now().Add(-time.Hour)
	for _, f := range []struct {
		path  string
		mtime time.Time
	}{{stale, old}, {fresh, time.Now()}} {
		if err := os.WriteFile(f.path, []byte("10.98.0.0/24\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f.path, f.mtime, f.mtime); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(cfg.subnetFile(), old, old); err != nil {
		t.Fatal(err)
	}
	if err := GC(context.Background(), cfg, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stale); err == nil {
		t.Errorf("stale temporary file %s kept", stale)
	}
	if _, err := os.Lstat(fresh); err != nil {
		t.Errorf("recent temporary file removed: %v", err)
	}
	if s, err := DefaultNetworkSubnet(cfg); err != nil || s != "10.99.0.0/24" {
		t.Errorf("default subnet after GC: %q, %v", s, err)
	}
}
