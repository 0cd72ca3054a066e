package tests

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestPodAppCommands drives `rkt app`: sandbox, add, start, list, status,
// exec (with and without a tty), stop, rm.
func TestPodAppCommands(t *testing.T) {
	pe := newPodEnv(t)
	r := pe.RunOK(append(append([]string{"app", "sandbox"}, pe.netArgs()...), "--hostname=sbx", "--annotation=k=v", "--memory=96M")...)
	uuid := strings.TrimSpace(r.Stdout)
	pe.TrackPod(uuid)
	p := pe.waitState(uuid, "running", 10*time.Second)
	if len(p.Apps) != 0 || p.podIP() == "" {
		t.Fatalf("sandbox: %+v", p)
	}
	r = pe.RunOK("app", "add", uuid, pe.image, "--name=web", "--set-env=GREETING=hi", "--exec=/bin/sh", "--", "-c", "trap 'exit 0' TERM; echo $GREETING; sleep 600 & wait")
	if strings.TrimSpace(r.Stdout) != "web" {
		t.Errorf("app add printed %q", r.Stdout)
	}
	if r = pe.Run("app", "add", uuid, pe.image, "--name=web"); r.Code == 0 {
		t.Errorf("duplicate app name accepted: %s", r)
	}
	r = pe.RunOK("app", "list", "--no-legend", uuid)
	if !strings.HasPrefix(r.Stdout, "web") || !strings.Contains(r.Stdout, "created") {
		t.Errorf("app list before start: %s", r)
	}
	pe.RunOK("app", "start", uuid, "--app=web")
	r = pe.RunOK("app", "status", uuid, "--app=web")
	if !strings.Contains(r.Stdout, "state=running") || !strings.Contains(r.Stdout, "pid=") {
		t.Errorf("app status: %s", r)
	}
	r = pe.RunOK("app", "exec", uuid, "--app=web", "--", "/bin/sh", "-c", "echo $GREETING $(hostname); tty || true")
	if !strings.Contains(r.Stdout, "hi sbx") || !strings.Contains(r.Stdout, "not a tty") {
		t.Errorf("app exec without tty: %s", r)
	}
	// the pod's memory limit is on the pod cgroup, the parent of the app's
	r = pe.RunOK("app", "exec", uuid, "--app=web", "--", "/bin/sh", "-c", "cat /proc/self/cgroup")
	checked := false
	for _, line := range strings.Split(r.Stdout, "\n") {
		if f := strings.SplitN(line, ":", 3); len(f) == 3 && f[1] == "memory" {
			limit := readFile(t, "/sys/fs/cgroup/memory"+strings.TrimSuffix(f[2], "/web")+"/memory.limit_in_bytes")
			if limit != "100663296" {
				t.Errorf("pod memory limit %s, want 96M", limit)
			}
			checked = true
		}
	}
	if !checked {
		t.Errorf("no memory cgroup in %q", r.Stdout)
	}
	r = pe.RunOK("app", "exec", "--tty=true", uuid, "--app=web", "--", "/bin/sh", "-c", "tty")
	if !strings.Contains(r.Stdout, "/dev/pts/") {
		t.Errorf("app exec with tty: %s", r)
	}
	r = pe.RunStdin([]byte("echo from-stdin-$((6*7))\nexit 5\n"), "enter", "--tty=true", "--app=web", uuid, "/bin/sh")
	if r.Code != 5 || !strings.Contains(r.Stdout, "from-stdin-42") {
		t.Errorf("enter with a tty: %s", r)
	}
	r = pe.RunOK("app", "list", "--format=json", uuid)
	var apps []struct{ Name, State string }
	if err := json.Unmarshal([]byte(r.Stdout), &apps); err != nil || len(apps) != 1 || apps[0].State != "running" {
		t.Errorf("app list json: %v %s", err, r)
	}
	start := time.Now()
	pe.RunOK("app", "stop", uuid, "--app=web")
	if time.Since(start) > 8*time.Second { // well under the 10s grace period
		t.Errorf("app stop took %s", time.Since(start))
	}
	r = pe.RunOK("app", "status", "--format=json", uuid, "--app=web")
	var st struct {
		State    string
		ExitCode int
	}
	json.Unmarshal([]byte(r.Stdout), &st)
	if st.State != "exited" || st.ExitCode != 0 {
		t.Errorf("app status after stop: %s", r)
	}
	r = pe.RunOK("logs", "--app=web", uuid)
	if r.Stdout != "hi\n" {
		t.Errorf("logs --app: %q", r.Stdout)
	}
	pe.RunOK("app", "rm", uuid, "--app=web")
	if p = pe.status(uuid); len(p.Apps) != 0 || p.State != "running" {
		t.Errorf("after app rm: %+v", p)
	}
	pe.RunOK("stop", uuid)
	pe.RunOK("rm", uuid)
}

// TestPodPrepare: prepare, list (prepared), run-prepared, gc --expire-prepared.
func TestPodPrepare(t *testing.T) {
	pe := newPodEnv(t)
	r := pe.RunOK(append(append([]string{"prepare"}, pe.netArgs()...), pe.image, "--exec=/bin/echo", "--", "prepared-ran")...)
	uuid := strings.TrimSpace(r.Stdout)
	pe.TrackPod(uuid)
	if p := pe.status(uuid); p.State != "prepared" {
		t.Fatalf("after prepare: %+v", p)
	}
	r = pe.RunOK(append(append([]string{"run-prepared"}, pe.netArgs()...), uuid[:8])...)
	if r.Stdout != "prepared-ran\n" {
		t.Errorf("run-prepared output: %s", r)
	}
	if r = pe.Run("run-prepared", uuid); r.Code == 0 {
		t.Errorf("run-prepared twice: %s", r)
	}
	r = pe.RunOK(append(append([]string{"prepare"}, pe.netArgs()...), pe.image)...)
	second := strings.TrimSpace(r.Stdout)
	pe.TrackPod(second)
	r = pe.RunOK("gc", "--expire-prepared=1h", "--grace-period=0s")
	if p := pe.status(second); p.State != "prepared" {
		t.Errorf("gc removed a fresh prepared pod: %s", r)
	}
	time.Sleep(1100 * time.Millisecond)
	pe.RunOK("gc", "--expire-prepared=1s")
	if r = pe.Run("status", second); r.Code == 0 {
		t.Errorf("expired prepared pod still there: %s", r)
	}
}

// TestPodAppAttach: `rkt app attach` feeds the app's stdin and shows its
// output, and ends when the app exits.
func TestPodAppAttach(t *testing.T) {
	pe := newPodEnv(t)
	sb := strings.TrimSpace(pe.RunOK(append([]string{"app", "sandbox"}, pe.netArgs()...)...).Stdout)
	pe.TrackPod(sb)
	pe.RunOK("app", "add", sb, pe.image, "--name=echo", "--stdin", "--exec=/bin/sh", "--", "-c", "read a; echo got-$a; read b; exit 4")
	pe.RunOK("app", "start", sb, "--app=echo")
	r := pe.RunStdin([]byte("first\nsecond\n"), "app", "attach", sb, "--app=echo")
	if !strings.Contains(r.Stdout, "got-first") {
		t.Errorf("attach: %s", r)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r = pe.RunOK("app", "status", sb, "--app=echo")
		if strings.Contains(r.Stdout, "exit-code=4") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(r.Stdout, "exit-code=4") {
		t.Errorf("app did not read its stdin to the end: %s", r)
	}
	pe.RunOK("stop", sb)
}
