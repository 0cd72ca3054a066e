package tests

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rkt/rkt/tests/testutil"
)

// TestPodSurvivesKilledRkt: kill -9 of a foreground `rkt run` leaves its pod
// running, and `rkt stop` still works.
func TestPodSurvivesKilledRkt(t *testing.T) {
	pe := newPodEnv(t)
	uuidFile := pe.Root + "/uuid"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append(append([]string{"run"}, pe.netArgs()...), "--uuid-file-save="+uuidFile, pe.image, "--exec=/bin/sleep", "--", "600")
	cmd := pe.Command(ctx, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	uuid := pe.waitUUIDFile(uuidFile, func() {})
	pe.waitState(uuid, "running", 10*time.Second)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	time.Sleep(300 * time.Millisecond)
	if p := pe.status(uuid); p.State != "running" || p.Apps[0].State != "running" {
		t.Fatalf("pod did not survive kill -9 of rkt: %+v", p)
	}
	pe.RunOK("stop", "--timeout=1s", uuid)
	if p := pe.status(uuid); p.State != "exited" {
		t.Errorf("after stop: %+v", p)
	}
}

// TestPodStage1Killed: kill -9 of the supervisor is reported as exited, and
// its apps as exited (killed).
func TestPodStage1Killed(t *testing.T) {
	pe := newPodEnv(t)
	uuid := pe.runDetached(pe.image, "--exec=/bin/sleep", "--", "600")
	p := pe.waitState(uuid, "running", 10*time.Second)
	if err := syscall.Kill(p.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("cannot kill stage1 %d: %v", p.Pid, err)
	}
	p = pe.waitState(uuid, "exited", 10*time.Second)
	if p.Apps[0].State != "exited" || p.Apps[0].ExitCode == 0 {
		t.Errorf("app of a killed supervisor: %+v", p.Apps[0])
	}
	// the app process is gone
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _ := exec.Command("pgrep", "-f", "sleep 600").Output()
		found := false
		for _, pid := range strings.Fields(string(out)) {
			if b, _ := exec.Command("cat", "/proc/"+pid+"/cgroup").Output(); strings.Contains(string(b), uuid) {
				found = true
			}
		}
		if !found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the app survived its supervisor")
		}
		time.Sleep(50 * time.Millisecond)
	}
	pe.RunOK("stop", uuid) // releases the network and mounts of the dead pod
}

// TestPodStopForce kills a pod whose app ignores SIGTERM.
func TestPodStopForce(t *testing.T) {
	pe := newPodEnv(t)
	uuid := pe.runDetached(pe.image, "--exec=/bin/sh", "--", "-c", "trap '' TERM; sleep 600 & wait; sleep 600")
	pe.waitState(uuid, "running", 10*time.Second)
	start := time.Now()
	pe.RunOK("stop", "--force", uuid)
	if d := time.Since(start); d > 8*time.Second { // well under the 10s grace period
		t.Errorf("stop --force took %s", d)
	}
	if p := pe.status(uuid); p.State != "exited" {
		t.Errorf("after stop --force: %+v", p)
	}
}

// TestPodInterruptStopsPod: SIGINT (Ctrl-C) to a foreground `rkt run`
// stops its pod.
func TestPodInterruptStopsPod(t *testing.T) {
	pe := newPodEnv(t)
	uuidFile := pe.Root + "/uuid"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append(append([]string{"run"}, pe.netArgs()...), "--uuid-file-save="+uuidFile, pe.image, "--exec=/bin/sh", "--", "-c", "trap 'exit 0' TERM; sleep 600 & wait")
	cmd := pe.Command(ctx, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	uuid := pe.waitUUIDFile(uuidFile, func() { cmd.Process.Kill() })
	pe.waitState(uuid, "running", 10*time.Second)
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("rkt run did not return after SIGINT")
	}
	if p := pe.status(uuid); p.State != "exited" {
		t.Errorf("pod after SIGINT to rkt run: %+v", p)
	}
}

// TestPodSurvivesKilledSession: killing the whole process group that ran
// `rkt run --detach` (a shell and its children) leaves the pod running.
func TestPodSurvivesKilledSession(t *testing.T) {
	pe := newPodEnv(t)
	uuidFile := pe.Root + "/uuid"
	rktArgs := append(append(pe.GlobalArgs(), "run", "--detach"), pe.netArgs()...)
	rktArgs = append(rktArgs, "--uuid-file-save="+uuidFile, pe.image, "--exec=/bin/sleep", "--", "600")
	script := testutil.RKTBin(t) + " " + strings.Join(rktArgs, " ") + " && sleep 600"
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	uuid := pe.waitUUIDFile(uuidFile, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	pe.waitState(uuid, "running", 10*time.Second)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	time.Sleep(300 * time.Millisecond)
	if p := pe.status(uuid); p.State != "running" {
		t.Fatalf("pod did not survive its session: %+v", p)
	}
	pe.RunOK("stop", "--force", uuid)
}

// TestPodKilledDuringStart kills `rkt run` at different moments of the
// start; whatever state that leaves, `rkt gc` cleans it up (the leak check
// at the end of the test verifies it).
func TestPodKilledDuringStart(t *testing.T) {
	pe := newPodEnv(t)
	for i, delay := range []time.Duration{20, 50, 80, 110, 140, 200} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		args := append(append([]string{"run", "--detach"}, pe.netArgs()...), pe.image, "--exec=/bin/sleep", "--", "600")
		cmd := pe.Command(ctx, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		cancel()
		r := pe.RunOK("list", "--format=json")
		var pods []podJSON
		if err := json.Unmarshal([]byte(r.Stdout), &pods); err != nil {
			t.Fatal(err)
		}
		states := map[string]int{}
		for _, p := range pods {
			pe.TrackPod(p.UUID)
			states[p.State]++
			// running pods are stopped, the rest is collected
			if p.State == "running" {
				pe.RunOK("stop", "--force", p.UUID)
			}
		}
		t.Logf("killed after %s (%d): pods by state %v", delay*time.Millisecond, i, states)
	}
	pe.RunOK("gc", "--grace-period=0s")
	if r := pe.RunOK("list", "--no-legend"); strings.TrimSpace(r.Stdout) != "" {
		t.Errorf("pods left after gc: %s", r.Stdout)
	}
}
