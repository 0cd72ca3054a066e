package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

var criLine = regexp.MustCompile(`^(\S+) (stdout|stderr) (P|F) (.*)$`)

// logEntries parses a CRI log into "stream tag line" strings.
func logEntries(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		m := criLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("log line not in CRI format: %q", l)
		}
		if _, err := time.Parse(time.RFC3339Nano, m[1]); err != nil {
			t.Fatalf("bad timestamp in %q: %v", l, err)
		}
		out = append(out, m[2]+" "+m[3]+" "+m[4])
	}
	return out
}

func TestRunModeExitCodeAndLogs(t *testing.T) {
	p := newPod(t, nil)
	p.addApp("hello", schema.App{}, []string{"sh", "-c", "echo out; echo err >&2; printf partial; exit 3"}, func(s *specs.Spec) {
		v := -999 // below ours: must be clamped, not fail
		s.Process.OOMScoreAdj = &v
		s.Process.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1 << 40, Soft: 1 << 40}}
	})
	p.addApp("ok", schema.App{LogPath: "custom/ok.log"}, []string{"true"}, nil)
	p.mustStart(modeRun)
	p.waitExit(20 * time.Second)
	st := p.status("hello")
	if st.State != schema.AppExited || st.ExitCode != 3 || st.Reason != "Error" || st.Signal != "" || st.OOMKilled {
		t.Errorf("status: %+v", st)
	}
	if st.StartedAt.IsZero() || st.FinishedAt.Before(st.StartedAt) || st.CreatedAt.IsZero() {
		t.Errorf("times: %+v", st)
	}
	if st := p.status("ok"); st.ExitCode != 0 || st.Reason != "Completed" {
		t.Errorf("ok status: %+v", st)
	}
	got := logEntries(t, filepath.Join(p.dir, "apps/hello/log"))
	// stdout and stderr are separate pipes: only the per-stream order is fixed.
	var stdout, stderr []string
	for _, e := range got {
		if strings.HasPrefix(e, "stdout") {
			stdout = append(stdout, e)
		} else {
			stderr = append(stderr, e)
		}
	}
	if strings.Join(stdout, "|") != "stdout F out|stdout F partial" || strings.Join(stderr, "|") != "stderr F err" {
		t.Errorf("log entries: %q", got)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "apps/ok/custom/ok.log")); err != nil {
		t.Errorf("relative log path: %v", err)
	}
	if cgroupExists(podCgroupPath(&p.manifest)) {
		t.Error("pod cgroup still exists after the supervisor exited")
	}
	if _, err := os.Stat(filepath.Join(p.dir, schema.Stage1Socket)); err == nil {
		t.Error("socket left after exit")
	}
}

func TestRunModeStartFailure(t *testing.T) {
	p := newPod(t, nil)
	p.addApp("bad", schema.App{}, []string{"/no/such/binary"}, nil)
	err := p.start(modeRun)
	if err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("start of a missing binary: %v", err)
	}
	st := p.status("bad")
	if st.State != schema.AppExited || st.Reason != "StartError" || st.Message == "" {
		t.Errorf("status: %+v", st)
	}
}

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
	p.addApp("stubborn", schema.App{StopSignal: "SIGUSR1"}, []string{"sh", "-c", "trap '' TERM; trap 'echo usr1' USR1; while true; do sleep 0.05; done"}, nil)
	if err := c.StartApp(ctx(t), "nope"); !errorsIs(err, control.ErrAppNotFound) {
		t.Errorf("start of unknown app: %v", err)
	}
	for _, a := range []string{"web", "stubborn"} {
		if err := c.StartApp(ctx(t), a); err != nil {
			t.Fatal(err)
		}
	}
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

	stats, err := c.Stats(ctx(t), "web")
	if err != nil || stats.Pids < 1 || stats.MemoryUsage == 0 || stats.CPUUsageNanos == 0 {
		t.Errorf("stats: %v %+v", err, stats)
	}
	limit := int64(64 << 20)
	if err := c.UpdateResources(ctx(t), "web", &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &limit}}); err != nil {
		t.Errorf("update resources: %v", err)
	} else if stats, err := c.Stats(ctx(t), "web"); err != nil || stats.MemoryLimit != uint64(limit) {
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
	if got := logEntries(t, filepath.Join(p.dir, "apps/stubborn/log")); len(got) != 1 || got[0] != "stdout F usr1" {
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

func TestOOMKilled(t *testing.T) {
	p := newPod(t, nil)
	p.addApp("hog", schema.App{}, []string{"sh", "-c", "a=0123456789; while true; do a=$a$a; done"}, func(s *specs.Spec) {
		limit := int64(16 << 20)
		s.Linux.Resources.Memory = &specs.LinuxMemory{Limit: &limit}
	})
	p.mustStart(modeRun)
	p.waitExit(30 * time.Second)
	st := p.status("hog")
	if !st.OOMKilled || st.Reason != "OOMKilled" || st.Signal != "SIGKILL" || st.ExitCode != 137 {
		t.Errorf("status: %+v", st)
	}
}

func TestAttachStdinOnce(t *testing.T) {
	p := newPod(t, nil)
	p.addApp("cat", schema.App{Stdin: true, StdinOnce: true}, []string{"sh", "-c", "cat; echo done >&2"}, nil)
	p.mustStart(modeSandbox)
	if err := p.client.StartApp(ctx(t), "cat"); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err := p.client.Attach(ctx(t), control.AttachRequest{App: "cat", Stdin: strings.NewReader("hello\n"), Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "hello\n" || errb.String() != "done\n" {
		t.Errorf("attach output %q %q", out.String(), errb.String())
	}
	if st := p.status("cat"); st.State != schema.AppExited || st.ExitCode != 0 {
		t.Errorf("status: %+v", st)
	}
	if err := p.client.Attach(ctx(t), control.AttachRequest{App: "cat", Stdout: &out}); !errorsIs(err, control.ErrAppNotRunning) {
		t.Errorf("attach to exited app: %v", err)
	}
}

func TestAttachTTY(t *testing.T) {
	p := newPod(t, nil)
	p.addApp("sh", schema.App{Stdin: true, TTY: true}, []string{"sh"}, nil)
	p.mustStart(modeSandbox)
	if err := p.client.StartApp(ctx(t), "sh"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := p.client.Attach(ctx(t), control.AttachRequest{App: "sh", TTY: true, Stdin: strings.NewReader("tty; exit 5\n"), Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "/dev/pts/0") {
		t.Errorf("attach tty output %q", out.String())
	}
	if st := p.status("sh"); st.ExitCode != 5 {
		t.Errorf("status: %+v", st)
	}
}

func TestSharedPIDNamespace(t *testing.T) {
	p := newPod(t, func(m *schema.PodManifest) { m.SharedPID = true })
	p.addApp("a", schema.App{}, []string{"sleep", "1001"}, nil)
	p.addApp("b", schema.App{}, []string{"sleep", "1002"}, nil)
	p.mustStart(modeRun)
	out, _ := p.exec("a", "ps", "-o", "args")
	if !strings.Contains(out, "sleep 1001") || !strings.Contains(out, "sleep 1002") {
		t.Errorf("ps in a shared PID namespace: %q", out)
	}
	if err := p.client.Shutdown(ctx(t), time.Second); err != nil {
		t.Fatal(err)
	}
	p.waitExit(10 * time.Second)
}

func TestSupervisorKilled(t *testing.T) {
	p := newPod(t, nil)
	p.addApp("sleeper", schema.App{}, []string{"sleep", "1000"}, nil)
	p.mustStart(modeRun)
	pid := p.status("sleeper").Pid
	if !pidAlive(pid) {
		t.Fatalf("app pid %d not running", pid)
	}
	p.cmd.Process.Kill()
	p.waitExit(5 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for pidAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if pidAlive(pid) {
		t.Fatalf("app %d survived its supervisor", pid)
	}
	if _, err := control.Dial(p.dir); !errorsIs(err, control.ErrNoSupervisor) {
		t.Errorf("dial after kill: %v", err)
	}
	// Status stays readable; gc records the app as dead.
	if st := p.status("sleeper"); st.State != schema.AppRunning {
		t.Errorf("status before gc: %+v", st)
	}
	if err := gcPod(p.dir); err != nil {
		t.Fatalf("gc: %v", err)
	}
	st := p.status("sleeper")
	if st.State != schema.AppExited || st.Reason != "SupervisorDied" || st.ExitCode != 137 {
		t.Errorf("status after gc: %+v", st)
	}
	if err := gcPod(p.dir); err != nil {
		t.Errorf("second gc: %v", err)
	}
}

func TestContextCancelKillsExec(t *testing.T) {
	p := newPod(t, nil)
	p.addApp("a", schema.App{}, []string{"sleep", "1000"}, nil)
	p.mustStart(modeRun)
	c, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := p.client.Exec(c, control.ExecRequest{App: "a", Args: []string{"sleep", "77"}})
	if err == nil || time.Since(t0) > 5*time.Second {
		t.Fatalf("cancelled exec: %v after %v", err, time.Since(t0))
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		out, _ := p.exec("a", "ps", "-o", "args")
		if !strings.Contains(out, "sleep 77") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("exec'd process survived the cancelled client: %q", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPodNetns(t *testing.T) {
	p := newPod(t, func(m *schema.PodManifest) {
		m.Net = "default"
		m.Sysctls = map[string]string{"net.ipv4.tcp_keepalive_time": "1234"}
	})
	// Without the netns stage0 should have made, the pod cannot start.
	if err := p.start(modeSandbox); err == nil || !strings.Contains(err.Error(), "netns") {
		t.Fatalf("start without netns: %v", err)
	}
	nsFile := filepath.Join(p.dir, schema.NetNSFile)
	if err := os.WriteFile(nsFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("unshare", "--net="+nsFile, "true").CombinedOutput(); err != nil {
		t.Fatalf("unshare: %v: %s", err, out)
	}
	p.addApp("a", schema.App{}, []string{"sleep", "1000"}, nil)
	p.mustStart(modeSandbox)
	if err := p.client.StartApp(ctx(t), "a"); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(nsFile, &st); err != nil {
		t.Fatal(err)
	}
	out, _ := p.exec("a", "readlink", "/proc/self/ns/net")
	if want := fmt.Sprintf("net:[%d]", st.Ino); strings.TrimSpace(out) != want {
		t.Errorf("app netns %q, want %q", out, want)
	}
	if out, _ := p.exec("a", "cat", "/proc/sys/net/ipv4/tcp_keepalive_time"); strings.TrimSpace(out) != "1234" {
		t.Errorf("net sysctl in the pod: %q", out)
	}
	host, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_keepalive_time")
	if strings.TrimSpace(string(host)) == "1234" {
		t.Error("the net sysctl changed the host")
	}
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

func TestSeccompAndReadonlyRootfs(t *testing.T) {
	p := newPod(t, nil)
	p.addApp("locked", schema.App{}, []string{"sh", "-c", "mkdir /tmp/x || echo blocked; touch /f 2>/dev/null || echo readonly"}, func(s *specs.Spec) {
		errno := uint(1) // EPERM
		s.Linux.Seccomp = &specs.LinuxSeccomp{
			DefaultAction: specs.ActAllow,
			Architectures: []specs.Arch{specs.ArchX86_64},
			Syscalls:      []specs.LinuxSyscall{{Names: []string{"mkdir", "mkdirat"}, Action: specs.ActErrno, ErrnoRet: &errno}},
		}
		s.Root.Readonly = true
	})
	p.mustStart(modeRun)
	p.waitExit(20 * time.Second)
	got := logEntries(t, filepath.Join(p.dir, "apps/locked/log"))
	if strings.Join(got, "|") != "stderr F mkdir: can't create directory '/tmp/x': Operation not permitted|stdout F blocked|stdout F readonly" &&
		strings.Join(got, "|") != "stdout F blocked|stderr F mkdir: can't create directory '/tmp/x': Operation not permitted|stdout F readonly" {
		t.Errorf("log: %q", got)
	}
}
