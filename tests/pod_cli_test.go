package tests

import (
	"strings"
	"testing"
	"time"
)

// TestPodExecArgs: `rkt enter` and `rkt app exec` take rkt's flags before
// and after the UUID, an optional "--", and then a command whose own flags
// (sh -c) and "--" are its arguments, not rkt's.
func TestPodExecArgs(t *testing.T) {
	pe := newPodEnv(t)
	uuid := pe.runDetached(pe.image, "--name=web", "--exec=/bin/sh", "--", "-c", "trap 'exit 0' TERM; sleep 600 & wait")
	pe.waitState(uuid, "running", 10*time.Second)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"enter", uuid, "--", "/bin/echo", "a", "--", "-c"}, "a -- -c"},
		{[]string{"enter", "--tty=false", uuid, "--", "/bin/sh", "-c", "echo enter-dash"}, "enter-dash"},
		{[]string{"enter", uuid, "--tty=false", "/bin/sh", "-c", "echo enter-flag-after-uuid"}, "enter-flag-after-uuid"},
		{[]string{"enter", "--", uuid, "/bin/sh", "-c", "echo enter-dash-first"}, "enter-dash-first"},
		{[]string{"app", "exec", uuid, "--app=web", "/bin/sh", "-c", "echo exec-no-dash"}, "exec-no-dash"},
		{[]string{"app", "exec", uuid, "--app=web", "--", "/bin/sh", "-c", "echo exec-dash"}, "exec-dash"},
		{[]string{"app", "exec", "--app=web", uuid, "/bin/sh", "-c", "echo exec-flag-first"}, "exec-flag-first"},
		{[]string{"app", "exec", "--app=web", uuid, "--", "/bin/echo", "--app=x", "--", "z"}, "--app=x -- z"},
	} {
		r := pe.Run(c.args...)
		if r.Code != 0 || strings.TrimSpace(r.Stdout) != c.want {
			t.Errorf("want %q: %s", c.want, r)
		}
	}
	// the command's exit code is rkt's
	if r := pe.Run("app", "exec", uuid, "--app=web", "/bin/sh", "-c", "exit 7"); r.Code != 7 {
		t.Errorf("want exit 7: %s", r)
	}
	if r := pe.Run("app", "exec", uuid, "--app=web"); r.Code != 254 || !strings.Contains(r.Stderr, "no command") {
		t.Errorf("app exec without a command: %s", r)
	}
	if r := pe.Run("app", "exec", uuid, "--app=web", "--bogus", "/bin/true"); r.Code != 254 || !strings.Contains(r.Stderr, "--bogus") {
		t.Errorf("an unknown rkt flag before the command: %s", r)
	}
	pe.RunOK("stop", "--timeout=1s", uuid)
}

// TestPodStopSaysWhatItWaitsFor: rkt stop tells on stderr how long it
// waits and with which signals; it says nothing for a pod already stopped.
func TestPodStopSaysWhatItWaitsFor(t *testing.T) {
	pe := newPodEnv(t)
	uuid := pe.runDetached(pe.image, "--exec=/bin/sh", "--", "-c", "trap 'exit 0' TERM; sleep 600 & wait")
	pe.waitState(uuid, "running", 10*time.Second)
	r := pe.RunOK("stop", "--timeout=3s", uuid[:8])
	want := "rkt: waiting up to 3s for pod " + uuid + " to stop (each app's stop signal, SIGTERM by default, then SIGKILL)\n"
	if r.Stderr != want || strings.TrimSpace(r.Stdout) != uuid[:8] {
		t.Errorf("rkt stop: want stderr %q: %s", want, r)
	}
	if r = pe.RunOK("stop", uuid); r.Stderr != "" {
		t.Errorf("rkt stop of a stopped pod printed %q", r.Stderr)
	}

	uuid = pe.runDetached(pe.image, "--exec=/bin/sleep", "--", "600")
	pe.waitState(uuid, "running", 10*time.Second)
	if r = pe.RunOK("stop", "--force", uuid); r.Stderr != "rkt: killing pod "+uuid+" (SIGKILL)\n" {
		t.Errorf("rkt stop --force: %s", r)
	}
}
