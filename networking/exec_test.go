package networking

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// scriptPlugin writes a plugin script and the file its background child's
// PID goes to; the test kills that child (by PID) if it still runs.
func scriptPlugin(t *testing.T, body string) (plugin, pidFile string) {
	t.Helper()
	dir := t.TempDir()
	plugin, pidFile = filepath.Join(dir, "plugin"), filepath.Join(dir, "child.pid")
	if err := os.WriteFile(plugin, []byte("#!/bin/sh\n"+body), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if pid, ok := childPID(pidFile); ok {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return plugin, pidFile
}

func childPID(pidFile string) (int, bool) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && pid > 0
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// A zombie (state Z) is dead: its parent, the shell, was killed.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// TestPluginChildHoldsOutput: a plugin that succeeds but leaves a child
// holding its stdout ends its run pluginWaitDelay later with its output
// (libcni's executor waited for the child forever).
func TestPluginChildHoldsOutput(t *testing.T) {
	defer func(d time.Duration) { pluginWaitDelay = d }(pluginWaitDelay)
	pluginWaitDelay = time.Second
	plugin, pidFile := scriptPlugin(t, `sleep 600 & echo $! > "${0%/*}/child.pid"
echo '{"cniVersion":"1.0.0"}'; exit 0`)
	e := newBoundedExec()
	e.RawExec.Stderr = nil
	start := time.Now()
	out, err := e.ExecPlugin(context.Background(), plugin, nil, nil)
	if err != nil || !strings.Contains(string(out), `"cniVersion"`) {
		t.Fatalf("ExecPlugin: %q, %v", out, err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("ExecPlugin took %v with a child holding its stdout", d)
	}
	if _, ok := childPID(pidFile); !ok {
		t.Fatal("the plugin's child did not start")
	}
}

// TestPluginTimeoutKillsGroup: a plugin that hangs in a child (not an
// exec) is killed after pluginTimeout with that child, and the run ends.
func TestPluginTimeoutKillsGroup(t *testing.T) {
	defer func(d time.Duration) { pluginTimeout = d }(pluginTimeout)
	pluginTimeout = time.Second
	plugin, pidFile := scriptPlugin(t, `sleep 600 & echo $! > "${0%/*}/child.pid"; wait; exit 0`)
	e := newBoundedExec()
	start := time.Now()
	_, err := e.ExecPlugin(context.Background(), plugin, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "was killed after 1s") {
		t.Fatalf("ExecPlugin of a hung plugin: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("ExecPlugin took %v, the plugin's bound is %v", d, pluginTimeout)
	}
	pid, ok := childPID(pidFile)
	if !ok {
		t.Fatal("the plugin's child did not start")
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the hung plugin's child %d still runs", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPluginError: a failing plugin's CNI error object is its error.
func TestPluginError(t *testing.T) {
	plugin, _ := scriptPlugin(t, `echo '{"cniVersion":"1.0.0","code":11,"msg":"no such network"}'; exit 1`)
	e := newBoundedExec()
	_, err := e.ExecPlugin(context.Background(), plugin, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "no such network") {
		t.Fatalf("ExecPlugin of a failing plugin: %v", err)
	}
}
