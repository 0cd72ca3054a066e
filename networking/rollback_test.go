package networking

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeScriptNetwork writes a network "scripted" in cfg.ConfDir: a script
// plugin (installed in a new plugin dir) followed by a bridge (the test's),
// so DEL runs the bridge first, then the script.
func writeScriptNetwork(t *testing.T, cfg *Config, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "script"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.PluginDirs = append([]string{dir}, cfg.pluginDirs()...)
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"scripted","plugins":[{"type":"script"},`+
		`{"type":"bridge","bridge":%q,"isGateway":true,"ipam":{"type":"host-local","subnet":%q}}]}`,
		cfg.DefaultBridge, cfg.DefaultSubnet)
	if err := os.WriteFile(filepath.Join(cfg.ConfDir, "scripted.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
}

const versionCase = `VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["1.0.0"]}'; exit 0 ;;`

// TestSetupDeadline: the caller's deadline expires during ADD; Setup fails
// and its rollback (with its own deadline) leaves nothing behind.
func TestSetupDeadline(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	writeScriptNetwork(t, &cfg, `case "$CNI_COMMAND" in `+versionCase+` ADD) exec sleep 30 ;; esac; exit 0`)
	pn := newPod(t, cfg, "scripted")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := Setup(ctx, cfg, pn); err == nil {
		t.Fatal("Setup succeeded past its deadline")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Setup took %v despite a 500ms deadline", d)
	}
	if left := hostLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
		t.Fatalf("after failed Setup: %v", left)
	}
	if _, err := Load(pn.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("net-info after failed Setup: %v", err)
	}
}

// TestTeardownRetry: a DEL that fails keeps the namespace and net-info.json
// so that a later Teardown, once the plugin works again, finishes the job.
func TestTeardownRetry(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	broken := filepath.Join(t.TempDir(), "broken")
	writeScriptNetwork(t, &cfg, fmt.Sprintf(`case "$CNI_COMMAND" in `+versionCase+`
ADD) echo '{"cniVersion":"1.0.0"}' ;;
DEL) if [ -e %q ]; then echo '{"cniVersion":"1.0.0","code":11,"msg":"broken on purpose"}'; exit 1; fi ;;
esac; exit 0`, broken))
	pn := newPod(t, cfg, "scripted")
	ctx := context.Background()
	res, err := Setup(ctx, cfg, pn)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if len(res.PodIPs()) != 1 {
		t.Fatalf("script plugin lost the bridge's result: %+v", res)
	}
	if err := os.WriteFile(broken, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Teardown(ctx, cfg, pn.Dir); err == nil || !strings.Contains(err.Error(), "broken on purpose") {
		t.Fatalf("Teardown with a failing DEL: %v", err)
	}
	if l, err := Load(pn.Dir); err != nil || !isNetNS(l.NetNS) {
		t.Fatalf("state not kept for retry: %v", err)
	}
	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	if err := Teardown(ctx, cfg, pn.Dir); err != nil {
		t.Fatalf("retried Teardown: %v", err)
	}
	if left := hostLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
		t.Fatalf("after retried Teardown: %v", left)
	}
}

// TestTeardownHungPlugin: a DEL that never ends is killed after
// pluginTimeout, also for a caller without a deadline (the service's
// repair, rkt gc); the pod's network is kept, and a Teardown once the
// plugin works again finishes the job.
func TestTeardownHungPlugin(t *testing.T) {
	requireRoot(t)
	defer func(d time.Duration) { pluginTimeout = d }(pluginTimeout)
	pluginTimeout = 3 * time.Second
	cfg := testConfig(t)
	hung := filepath.Join(t.TempDir(), "hung")
	writeScriptNetwork(t, &cfg, fmt.Sprintf(`case "$CNI_COMMAND" in `+versionCase+`
ADD) echo '{"cniVersion":"1.0.0"}' ;;
DEL) [ -e %q ] && exec sleep 600 ;;
esac; exit 0`, hung))
	pn := newPod(t, cfg, "scripted")
	ctx := context.Background()
	if _, err := Setup(ctx, cfg, pn); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if err := os.WriteFile(hung, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := Teardown(ctx, cfg, pn.Dir)
	if err == nil || !strings.Contains(err.Error(), "was killed after 3s") {
		t.Fatalf("Teardown with a hung DEL: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("Teardown with a hung DEL took %v, the plugin's bound is %v", d, pluginTimeout)
	}
	if l, err := Load(pn.Dir); err != nil || !isNetNS(l.NetNS) {
		t.Fatalf("state not kept for retry: %v", err)
	}
	if err := os.Remove(hung); err != nil {
		t.Fatal(err)
	}
	if err := Teardown(ctx, cfg, pn.Dir); err != nil {
		t.Fatalf("Teardown once the plugin works: %v", err)
	}
	if left := hostLeftovers(t, cfg, pn, cfg.DefaultBridge); len(left) > 0 {
		t.Fatalf("after the second Teardown: %v", left)
	}
}
