package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

func TestSharedPIDNamespace(t *testing.T) {
	p := newPod(t, func(m *schema.PodManifest) { m.SharedPID = true })
	p.addApp("a", schema.App{}, []string{"sleep", "1001"}, nil)
	p.addApp("b", schema.App{}, []string{"sleep", "1002"}, nil)
	p.mustStart(modeRun)
	// An app runs once its init has exec'd it, shortly after its start
	// returns (as with runc start).
	var out string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if out, _ = p.exec("a", "ps", "-o", "args"); strings.Contains(out, "sleep 1001") && strings.Contains(out, "sleep 1002") {
			break
		}
	}
	if !strings.Contains(out, "sleep 1001") || !strings.Contains(out, "sleep 1002") {
		t.Errorf("ps in a shared PID namespace: %q", out)
	}
	if err := p.client.Shutdown(ctx(t), time.Second); err != nil {
		t.Fatal(err)
	}
	p.waitExit(10 * time.Second)
}

// TestSupervisorKilled: the apps and the shared PID namespace's holder die
// with a killed supervisor, Go or lean (refresh.go).
func TestSupervisorKilled(t *testing.T) {
	for _, lean := range []bool{false, true} {
		t.Run(map[bool]string{false: "go", true: "lean"}[lean], func(t *testing.T) { testSupervisorKilled(t, lean) })
	}
}

func testSupervisorKilled(t *testing.T, lean bool) {
	p := newPod(t, func(m *schema.PodManifest) { m.SharedPID = lean })
	p.addApp("sleeper", schema.App{}, []string{"sleep", "1000"}, nil)
	if lean {
		p.args = []string{"--refresh-delay=100ms"}
	}
	p.mustStart(modeRun)
	pid := p.status("sleeper").Pid
	if !pidAlive(pid) {
		t.Fatalf("app pid %d not running", pid)
	}
	if lean {
		p.waitImage("lean")
	}
	children, _ := filepath.Glob("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/task/*/children")
	var pids []int
	for _, f := range children {
		b, _ := os.ReadFile(f)
		for _, w := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(w)
			pids = append(pids, n)
		}
	}
	if lean && len(pids) != 2 {
		t.Errorf("children of the lean supervisor: %v; want the app and the holder", pids)
	}
	p.cmd.Process.Kill()
	p.waitExit(5 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for _, c := range append(pids, pid) {
		for pidAlive(c) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if pidAlive(c) {
			t.Fatalf("process %d survived its supervisor", c)
		}
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

func TestPodNetns(t *testing.T) {
	p := newPod(t, func(m *schema.PodManifest) {
		m.Net = "default"
		m.Sysctls = map[string]string{"net.ipv4.tcp_keepalive_time": "1234"}
	})
	// Without the netns stage0 should have made, the pod cannot start.
	if err := p.start(modeSandbox); err == nil || !strings.Contains(err.Error(), "netns") {
		t.Fatalf("start without netns: %v", err)
	}
	nsFile := schema.PodDir(p.dir).NetNS()
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

func TestSIGTERMStopsThePod(t *testing.T) {
	p := newPod(t, nil)
	p.addApp("graceful", schema.App{}, []string{"sh", "-c", "trap 'echo term; exit 0' TERM; echo ready; while true; do sleep 0.05; done"}, nil)
	p.mustStart(modeRun)
	p.waitLog("graceful", "stdout F ready")
	if err := p.cmd.Process.Signal(unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitExit(15 * time.Second)
	if st := p.status("graceful"); st.State != schema.AppExited || st.ExitCode != 0 {
		t.Errorf("status: %+v", st)
	}
	if cgroupExists(podCgroupPath(&p.manifest)) {
		t.Error("pod cgroup left after SIGTERM")
	}
}
