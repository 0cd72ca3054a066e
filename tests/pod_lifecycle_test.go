package tests

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestPodLifecycle drives a detached pod through list, status, logs, enter,
// stop, gc and rm.
func TestPodLifecycle(t *testing.T) {
	pe := newPodEnv(t)
	uuid := pe.runDetached(pe.image, "--name=sleeper", "--exec=/bin/sh", "--", "-c", "trap 'exit 0' TERM; echo started; sleep 600 & wait")
	p := pe.waitState(uuid, "running", 10*time.Second)
	if len(p.Apps) != 1 || p.Apps[0].Name != "sleeper" || p.Pid <= 0 || p.podIP() == "" {
		t.Fatalf("running pod status: %+v", p)
	}

	// list: table, --full, --no-legend, json
	r := pe.RunOK("list")
	if !strings.Contains(r.Stdout, "UUID") || !strings.Contains(r.Stdout, uuid[:8]) || !strings.Contains(r.Stdout, "running") || !strings.Contains(r.Stdout, "sleeper") {
		t.Errorf("list: %s", r)
	}
	r = pe.RunOK("list", "--full", "--no-legend")
	if strings.Contains(r.Stdout, "UUID") || !strings.Contains(r.Stdout, uuid) || !strings.Contains(r.Stdout, "default:ip4="+p.podIP()) {
		t.Errorf("list --full --no-legend: %s", r)
	}
	r = pe.RunOK("list", "--format=json")
	var pods []podJSON
	if err := json.Unmarshal([]byte(r.Stdout), &pods); err != nil || len(pods) != 1 || pods[0].UUID != uuid || pods[0].State != "running" {
		t.Errorf("list --format=json: %v %s", err, r)
	}
	// status by prefix, plain
	r = pe.RunOK("status", uuid[:8])
	if !strings.Contains(r.Stdout, "state=running") || !strings.Contains(r.Stdout, "exited=false") {
		t.Errorf("status: %s", r)
	}
	// logs
	deadline := time.Now().Add(5 * time.Second)
	for {
		r = pe.RunOK("logs", uuid)
		if strings.Contains(r.Stdout, "started") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r.Stdout != "started\n" {
		t.Errorf("logs: %s", r)
	}
	// enter without a tty
	r = pe.RunStdin([]byte{}, "enter", "--tty=false", uuid, "/bin/sh", "-c", "echo in-$(hostname); exit 3")
	if r.Code != 3 || !strings.Contains(r.Stdout, "in-rkt-"+uuid) {
		t.Errorf("enter: %s", r)
	}
	// shell completion of pod UUIDs
	if r = pe.RunOK("__complete", "stop", uuid[:4]); !strings.Contains(r.Stdout, uuid+"\trunning") {
		t.Errorf("completion of running pods: %s", r)
	}
	if r = pe.RunOK("__complete", "run-prepared", ""); strings.Contains(r.Stdout, uuid) {
		t.Errorf("run-prepared completes a running pod: %s", r)
	}
	// cat-manifest
	r = pe.RunOK("cat-manifest", uuid)
	if !strings.Contains(r.Stdout, `"name": "sleeper"`) {
		t.Errorf("cat-manifest: %s", r)
	}
	// rm refuses a running pod
	if r = pe.Run("rm", uuid); r.Code == 0 {
		t.Errorf("rm of a running pod succeeded: %s", r)
	}
	start := time.Now()
	pe.RunOK("stop", uuid)
	if d := time.Since(start); d > 8*time.Second { // well under the 10s grace period
		t.Errorf("stop took %s although the app exits on SIGTERM", d)
	}
	p = pe.status(uuid)
	if p.State != "exited" || p.Apps[0].State != "exited" {
		t.Errorf("after stop: %+v", p)
	}
	pe.RunOK("stop", uuid) // idempotent
	r = pe.RunOK("gc", "--grace-period=0s")
	if !strings.Contains(r.Stdout, uuid) {
		t.Errorf("gc did not collect the pod: %s", r)
	}
	if r = pe.Run("status", uuid); r.Code == 0 {
		t.Errorf("status of a collected pod: %s", r)
	}
}

// TestPodRemove removes an exited pod with rm, by --uuid-file.
func TestPodRemove(t *testing.T) {
	pe := newPodEnv(t)
	uuidFile := pe.Root + "/uuid"
	r := pe.run("--uuid-file-save="+uuidFile, pe.image, "--exec=/bin/true")
	if r.Code != 0 {
		t.Fatalf("run: %s", r)
	}
	uuid := readFile(t, uuidFile)
	pe.TrackPod(uuid)
	pe.RunOK("rm", "--uuid-file="+uuidFile)
	if r = pe.Run("status", uuid); r.Code == 0 {
		t.Errorf("status after rm: %s", r)
	}
}

// TestPodWaitAndFollow: status --wait returns when the pod exits; logs -f
// streams until then.
func TestPodWaitAndFollow(t *testing.T) {
	pe := newPodEnv(t)
	uuid := pe.runDetached(pe.image, "--exec=/bin/sh", "--", "-c", "for i in 1 2 3; do echo line$i; sleep 0.3; done; exit 2")
	start := time.Now()
	r := pe.RunOK("logs", "-f", uuid)
	if r.Stdout != "line1\nline2\nline3\n" {
		t.Errorf("logs -f: %s", r)
	}
	r = pe.RunOK("status", "--wait", uuid)
	if !strings.Contains(r.Stdout, "state=exited") || !strings.Contains(r.Stdout, "exit-code=2") || time.Since(start) < 600*time.Millisecond {
		t.Errorf("status --wait after %s: %s", time.Since(start), r)
	}
	r = pe.RunOK("list", "--format=json-pretty")
	if !strings.Contains(r.Stdout, "\n  {\n") || !strings.Contains(r.Stdout, uuid) {
		t.Errorf("list --format=json-pretty: %s", r)
	}
	other := pe.runDetached(pe.image, "--exec=/bin/sleep", "--", "600")
	if r = pe.Run("status", "--wait=300ms", other); r.Code == 0 {
		t.Errorf("status --wait=300ms on a running pod: %s", r)
	}
	pe.RunOK("stop", "--force", other)
}
