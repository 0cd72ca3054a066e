package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/schema"
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
	// Starts after "ok" has probably exited: the pod must still run it.
	p.addApp("late", schema.App{}, []string{"sh", "-c", "sleep 0.5; echo late"}, nil)
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
	if st := p.status("late"); st.ExitCode != 0 || st.Reason != "Completed" {
		t.Errorf("late status: %+v", st)
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
	if strings.Join(stdout, "|") != "stdout F out|stdout P partial" || strings.Join(stderr, "|") != "stderr F err" {
		t.Errorf("log entries: %q", got)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "apps/ok/custom/ok.log")); err != nil {
		t.Errorf("relative log path: %v", err)
	}
	if cgroupExists(podCgroupPath(&p.manifest)) {
		t.Error("pod cgroup still exists after the supervisor exited")
	}
	if _, err := os.Stat(schema.PodDir(p.dir).Stage1Socket()); err == nil {
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
	// stdout and stderr are copied independently: only each stream's own
	// order is defined
	var stdout, stderr []string
	for _, e := range got {
		if strings.HasPrefix(e, "stderr ") {
			stderr = append(stderr, e)
		} else {
			stdout = append(stdout, e)
		}
	}
	if strings.Join(stdout, "|") != "stdout F blocked|stdout F readonly" ||
		strings.Join(stderr, "|") != "stderr F mkdir: can't create directory '/tmp/x': Operation not permitted" {
		t.Errorf("log: %q", got)
	}
}

func TestLongPodDir(t *testing.T) {
	parent := filepath.Join(t.TempDir(), strings.Repeat("x", 50), strings.Repeat("y", 50))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	p := newPodIn(t, parent, nil)
	p.addApp("a", schema.App{}, []string{"sleep", "1000"}, nil)
	p.mustStart(modeSandbox)
	if err := p.client.StartApp(ctx(t), "a"); err != nil {
		t.Fatal(err)
	}
	if out, code := p.exec("a", "echo", "ok"); code != 0 || out != "ok\n" {
		t.Errorf("exec: %q %d", out, code)
	}
	if err := p.client.Shutdown(ctx(t), 0); err != nil {
		t.Fatal(err)
	}
	p.waitExit(10 * time.Second)
}

func TestStartErrorOnBadSpec(t *testing.T) {
	p := newPod(t, nil)
	p.addApp("broken", schema.App{}, []string{"true"}, nil)
	if err := os.WriteFile(schema.PodDir(p.dir).App("broken").Spec(), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.mustStart(modeSandbox)
	if err := p.client.StartApp(ctx(t), "broken"); err == nil || !strings.Contains(err.Error(), "cannot parse spec") {
		t.Fatalf("start with a corrupt spec: %v", err)
	}
	if st := p.status("broken"); st.State != schema.AppExited || st.Reason != "StartError" || st.ExitCode != 128 {
		t.Errorf("status: %+v", st)
	}
}

// TestRlimitsApplied: the rlimits of an app's spec are those its processes get, for the
// app and for an exec in it. runc's specconv no longer converts
// spec.Process.Rlimits (runc's CLI does it in its own newProcess), so they
// must be put on the libcontainer process.
func TestRlimitsApplied(t *testing.T) {
	needRoot(t)
	p := newPod(t, nil)
	p.addApp("lim", schema.App{}, []string{"sh", "-c", "echo nofile=$(ulimit -Sn)/$(ulimit -Hn); sleep 60"}, func(s *specs.Spec) {
		s.Process.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: 100, Hard: 200}}
	})
	p.mustStart(modeSandbox)
	if err := p.client.StartApp(ctx(t), "lim"); err != nil {
		t.Fatalf("start: %v\n%s", err, p.log())
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(p.logOf("lim"), "nofile=") {
		time.Sleep(10 * time.Millisecond)
	}
	if log := p.logOf("lim"); !strings.Contains(log, " stdout F nofile=100/200\n") {
		t.Errorf("app's RLIMIT_NOFILE: log %q, want nofile=100/200", log)
	}
	out, code := p.exec("lim", "sh", "-c", "echo $(ulimit -Sn)/$(ulimit -Hn)")
	if code != 0 || strings.TrimSpace(out) != "100/200" {
		t.Errorf("exec's RLIMIT_NOFILE = %q (code %d), want 100/200", out, code)
	}
}
