package tests

import (
	"strings"
	"testing"
	"time"
)

// TestPodStartFailures: apps that cannot start fail the command with the
// reason and leave nothing running or mounted.
func TestPodStartFailures(t *testing.T) {
	pe := newPodEnv(t)
	uuidFile := pe.Root + "/uuid"
	r := pe.run("--uuid-file-save="+uuidFile, pe.image, "--exec=/does/not/exist")
	if r.Code == 0 || !strings.Contains(r.Stderr, "/does/not/exist") {
		t.Errorf("run of a missing binary: %s", r)
	}
	if uuid := readFile(t, uuidFile); uuid != "" {
		pe.TrackPod(uuid)
		if p := pe.status(uuid); p.State == "running" {
			t.Errorf("failed pod is running: %+v", p)
		}
		if !strings.Contains(r.Stderr, "rkt rm "+uuid) {
			t.Errorf("a failed run does not say how its pod is removed: %s", r)
		}
	} else {
		t.Error("no uuid saved by a failed run")
	}
	if r = pe.run(pe.image, "--user=no-such-user", "--exec=/bin/true"); r.Code == 0 || !strings.Contains(r.Stderr, "no-such-user") {
		t.Errorf("run with an unknown user: %s", r)
	}
	if r = pe.run("--net=no-such-net", pe.image, "--exec=/bin/true"); r.Code == 0 || !strings.Contains(r.Stderr, "no-such-net") {
		t.Errorf("run on an unknown network: %s", r)
	}
	if r = pe.Run("run", "--pull-policy=never", "example.invalid/none:1"); r.Code == 0 {
		t.Errorf("run of a missing image with --pull-policy=never: %s", r)
	}

	sb := strings.TrimSpace(pe.RunOK(append([]string{"app", "sandbox"}, pe.netArgs()...)...).Stdout)
	pe.TrackPod(sb)
	if r = pe.Run("app", "add", sb, pe.image, "--name=bad", "--user=no-such-user"); r.Code == 0 {
		t.Errorf("app add with an unknown user: %s", r)
	}
	pe.RunOK("app", "add", sb, pe.image, "--name=missing", "--exec=/does/not/exist")
	if r = pe.Run("app", "start", sb, "--app=missing"); r.Code == 0 {
		t.Errorf("app start of a missing binary: %s", r)
	}
	pe.RunOK("app", "add", sb, pe.image, "--name=ok", "--exec=/bin/sh", "--", "-c", "exit 3")
	pe.RunOK("app", "start", sb, "--app=ok")
	deadline := time.Now().Add(5 * time.Second)
	for {
		r = pe.RunOK("app", "status", sb, "--app=ok")
		if strings.Contains(r.Stdout, "exit-code=3") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(r.Stdout, "state=exited") || !strings.Contains(r.Stdout, "exit-code=3") {
		t.Errorf("exited app status: %s", r)
	}
	if p := pe.status(sb); p.State != "running" {
		t.Errorf("a sandbox whose apps exited must keep running: %+v", p)
	}
	if r = pe.Run("app", "start", sb, "--app=nope"); r.Code == 0 {
		t.Errorf("start of an unknown app: %s", r)
	}
	pe.RunOK("stop", sb)
}
