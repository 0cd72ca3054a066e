package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/cgstats"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

func TestSandboxLifecycle(t *testing.T) {
	p := newPod(t, func(m *schema.PodManifest) {
		m.Hostname = "podhost"
		m.Sysctls = map[string]string{"kernel.shmmni": "1024"}
	})
	p.mustStart(modeSandbox)
	c := p.client
	if sts, err := c.Status(ctx(t)); err != nil || len(sts) != 0 {
		t.Fatalf("empty sandbox status: %v %+v", err, sts)
	}
	// stage0 adds an app to a running sandbox: files, then StartApp.
	p.addApp("web", schema.App{}, []string{"sh", "-c", "trap 'echo bye; exit 0' TERM; echo started; while true; do sleep 0.05; done"}, func(s *specs.Spec) {
		s.Process.User = specs.User{UID: 65534, GID: 65534}
	})
	// Ignores SIGTERM; its stop signal is SIGUSR1, which it reports.
	p.addApp("stubborn", schema.App{StopSignal: "SIGUSR1"}, []string{"sh", "-c", "trap '' TERM; trap 'echo usr1' USR1; echo ready; while true; do sleep 0.05; done"}, nil)
	if err := c.StartApp(ctx(t), "nope"); !errorsIs(err, control.ErrAppNotFound) {
		t.Errorf("start of unknown app: %v", err)
	}
	for _, a := range []string{"web", "stubborn"} {
		if err := c.StartApp(ctx(t), a); err != nil {
			t.Fatal(err)
		}
	}
	p.waitLog("web", "stdout F started")
	p.waitLog("stubborn", "stdout F ready")
	if err := c.StartApp(ctx(t), "web"); !errorsIs(err, control.ErrAppRunning) {
		t.Errorf("second start: %v", err)
	}
	sts, err := c.Status(ctx(t))
	if err != nil || len(sts) != 2 || sts[0].State != schema.AppRunning || sts[0].Pid == 0 {
		t.Fatalf("status: %v %+v", err, sts)
	}
	if out, code := p.exec("web", "hostname"); code != 0 || strings.TrimSpace(out) != "podhost" {
		t.Errorf("hostname: %q %d", out, code)
	}
	if out, _ := p.exec("web", "cat", "/proc/sys/kernel/shmmni"); strings.TrimSpace(out) != "1024" {
		t.Errorf("ipc sysctl: %q", out)
	}
	if out, _ := p.exec("web", "id", "-u"); strings.TrimSpace(out) != "65534" {
		t.Errorf("exec user (app default): %q", out)
	}
	var out bytes.Buffer
	code, err := c.Exec(ctx(t), control.ExecRequest{App: "web", Args: []string{"sh", "-c", "id -u; echo $FOO; pwd; exit 7"},
		User: "root", Env: []string{"FOO=bar"}, Cwd: "/tmp", Stdout: &out})
	if err != nil || code != 7 || out.String() != "0\nbar\n/tmp\n" {
		t.Errorf("exec: %d %v %q", code, err, out.String())
	}
	out.Reset()
	code, err = c.Exec(ctx(t), control.ExecRequest{App: "web", Args: []string{"cat"}, Stdin: strings.NewReader("via stdin"), Stdout: &out})
	if err != nil || code != 0 || out.String() != "via stdin" {
		t.Errorf("exec stdin: %d %v %q", code, err, out.String())
	}
	out.Reset()
	resize := make(chan control.TermSize, 1)
	resize <- control.TermSize{Width: 123, Height: 45}
	code, err = c.Exec(ctx(t), control.ExecRequest{App: "web", Args: []string{"sh", "-c", "sleep 0.3; tty; stty size"}, TTY: true, Stdout: &out, Resize: resize})
	if err != nil || code != 0 || !strings.Contains(out.String(), "/dev/pts/") || !strings.Contains(out.String(), "45 123") {
		t.Errorf("exec tty: %d %v %q", code, err, out.String())
	}
	if _, err := c.Exec(ctx(t), control.ExecRequest{App: "web", Args: []string{"/nonexistent"}}); err == nil {
		t.Error("exec of a missing binary succeeded")
	}

	// stats are read by stage0 (pkg/cgstats) from the cgroup stage1 made
	webPid := 0
	if sts, err := c.Status(ctx(t)); err == nil {
		for _, st := range sts {
			if st.Name == "web" {
				webPid = st.Pid
			}
		}
	}
	stats, err := cgstats.ReadPid(webPid)
	if err != nil || stats.Processes < 1 || stats.MemoryUsage == 0 || stats.CPUUsageNanos == 0 {
		t.Errorf("stats: %v %+v", err, stats)
	}
	limit := int64(64 << 20)
	if err := c.UpdateResources(ctx(t), "web", &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &limit}}); err != nil {
		t.Errorf("update resources: %v", err)
	} else if stats, err := cgstats.ReadPid(webPid); err != nil || stats.MemoryLimit != uint64(limit) {
		t.Errorf("limit after update: %v %+v", err, stats)
	}

	// Log rotation.
	logPath := filepath.Join(p.dir, "apps/web/log")
	os.Rename(logPath, logPath+".1")
	if err := c.ReopenLog(ctx(t), "web"); err != nil {
		t.Errorf("reopen: %v", err)
	}

	if err := c.RemoveApp(ctx(t), "web"); !errorsIs(err, control.ErrAppRunning) {
		t.Errorf("remove of running app: %v", err)
	}
	t0 := time.Now()
	if err := c.StopApp(ctx(t), "web", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("graceful stop took %v", d)
	}
	if st := p.status("web"); st.ExitCode != 0 || st.Signal != "" || st.Reason != "Completed" {
		t.Errorf("graceful stop status: %+v", st)
	}
	if got := logEntries(t, logPath); len(got) != 1 || got[0] != "stdout F bye" {
		t.Errorf("log after reopen: %q", got)
	}
	if got := logEntries(t, logPath+".1"); len(got) != 1 || got[0] != "stdout F started" {
		t.Errorf("rotated log: %q", got)
	}
	t0 = time.Now()
	if err := c.StopApp(ctx(t), "stubborn", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 300*time.Millisecond || d > 5*time.Second {
		t.Errorf("forced stop took %v", d)
	}
	if st := p.status("stubborn"); st.ExitCode != 137 || st.Signal != "SIGKILL" || st.Reason != "Error" {
		t.Errorf("forced stop status: %+v", st)
	}
	if got := logEntries(t, filepath.Join(p.dir, "apps/stubborn/log")); len(got) != 2 || got[1] != "stdout F usr1" {
		t.Errorf("stop signal not delivered: %q", got)
	}
	if err := c.StopApp(ctx(t), "stubborn", time.Second); err != nil {
		t.Errorf("stop of a stopped app: %v", err)
	}
	if err := c.RemoveApp(ctx(t), "stubborn"); err != nil {
		t.Errorf("remove: %v", err)
	}
	if sts, _ := c.Status(ctx(t)); len(sts) != 1 || sts[0].Name != "web" {
		t.Errorf("status after remove: %+v", sts)
	}
	// A stopped app can be started again (a new container).
	if err := c.StartApp(ctx(t), "web"); err != nil {
		t.Errorf("restart: %v", err)
	}
	if err := c.Shutdown(ctx(t), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.waitExit(10 * time.Second)
	if cgroupExists(podCgroupPath(&p.manifest)) {
		t.Error("pod cgroup left after shutdown")
	}
}

func errorsIs(err, target error) bool {
	for e := err; e != nil; {
		if e == target {
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

func TestConcurrentAppsAndExecs(t *testing.T) {
	p := newPod(t, nil)
	names := []string{"a", "b", "c", "d"}
	for _, n := range names {
		p.addApp(n, schema.App{}, []string{"sleep", "1000"}, nil)
	}
	p.mustStart(modeSandbox)
	errs := make(chan error, 3*len(names))
	for _, n := range names {
		go func() { errs <- p.client.StartApp(ctx(t), n) }()
	}
	for range names {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		for i := range 3 {
			go func() {
				var out bytes.Buffer
				code, err := p.client.Exec(ctx(t), control.ExecRequest{App: n, Args: []string{"echo", n}, Stdout: &out})
				if err == nil && (code != 0 || out.String() != n+"\n") {
					err = fmt.Errorf("exec %d in %s: code %d output %q", i, n, code, out.String())
				}
				errs <- err
			}()
		}
	}
	for range 3 * len(names) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	sts, err := p.client.Status(ctx(t))
	if err != nil || len(sts) != len(names) {
		t.Fatalf("status: %v %+v", err, sts)
	}
	for _, st := range sts {
		if st.State != schema.AppRunning {
			t.Errorf("app %s: %+v", st.Name, st)
		}
	}
	if err := p.client.Shutdown(ctx(t), 0); err != nil {
		t.Fatal(err)
	}
	p.waitExit(10 * time.Second)
	for _, n := range names {
		if st := p.status(n); st.State != schema.AppExited || st.Signal != "SIGKILL" {
			t.Errorf("after shutdown %s: %+v", n, st)
		}
	}
}

func TestNoLeaksAcrossRestarts(t *testing.T) {
	p := newPod(t, nil)
	p.addApp("a", schema.App{Stdin: true}, []string{"sleep", "1000"}, nil)
	p.addApp("t", schema.App{Stdin: true, TTY: true}, []string{"sleep", "1000"}, nil)
	p.mustStart(modeSandbox)
	count := func() (fds, threads int) {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.cmd.Process.Pid))
		return len(ents), len(tasks)
	}
	cycle := func() {
		for _, app := range []string{"a", "t"} {
			if err := p.client.StartApp(ctx(t), app); err != nil {
				t.Fatal(err)
			}
			p.exec(app, "true")
			var out bytes.Buffer
			if _, err := p.client.Exec(ctx(t), control.ExecRequest{App: app, Args: []string{"tty"}, TTY: true, Stdout: &out}); err != nil {
				t.Fatal(err)
			}
			if err := p.client.StopApp(ctx(t), app, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	cycle()
	fds0, _ := count()
	for range 10 {
		cycle()
	}
	// the last cycle's connections close asynchronously: wait for it
	fds1, threads := count()
	for deadline := time.Now().Add(5 * time.Second); fds1 > fds0 && time.Now().Before(deadline); fds1, threads = count() {
		time.Sleep(20 * time.Millisecond)
	}
	if fds1 > fds0 {
		t.Errorf("supervisor fds: %d after one cycle, %d after ten more", fds0, fds1)
	}
	if threads > 20 {
		t.Errorf("supervisor has %d threads", threads)
	}
}
