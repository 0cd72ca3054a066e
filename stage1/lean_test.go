package main

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

// waitImage waits until the supervisor runs as `stage1 <image>` (lean or
// resume).
func (p *testPod) waitImage(image string) {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/cmdline")
		if args := strings.Split(string(b), "\x00"); len(args) > 1 && args[1] == image {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.t.Fatalf("the supervisor never ran as stage1 %s\n%s", image, p.log())
}

// logOf returns the app's log.
func (p *testPod) logOf(app string) string {
	b, _ := os.ReadFile(schema.PodDir(p.dir).App(app).DefaultLog())
	return string(b)
}

// TestLeanSupervisor: an idle supervisor becomes `stage1 lean`, which logs
// the apps' output, and is the Go supervisor again for every call, an
// app's exit and SIGTERM, with nothing lost on the way.
func TestLeanSupervisor(t *testing.T) {
	p := newPod(t, nil)
	p.args = []string{"--refresh-delay=200ms"}
	p.addApp("talker", schema.App{}, []string{"sh", "-c",
		"echo one; printf 'par'; sleep 1; echo tial; i=0; while true; do i=$((i+1)); echo tick$i; sleep 0.2; done"}, nil)
	p.addApp("short", schema.App{}, []string{"sh", "-c", "sleep 1; echo done; exit 3"}, nil)
	p.addApp("sleeper", schema.App{}, []string{"sh", "-c", "trap 'exit 143' TERM; while true; do sleep 0.1; done"}, nil)
	p.addApp("ttyapp", schema.App{TTY: true, Stdin: true}, []string{"sh", "-c", "stty -echo; while read l; do echo tty:$l; done"}, nil)
	p.mustStart(modeSandbox)
	c := p.client
	for _, a := range []string{"talker", "ttyapp"} {
		if err := c.StartApp(ctx(t), a); err != nil {
			t.Fatal(err)
		}
	}
	p.waitImage("lean")
	// the lean image logs: a line begun before it came, then whole lines
	p.waitLog("talker", "stdout F tick3")
	log := p.logOf("talker")
	if !strings.Contains(log, " stdout F one\n") || !strings.Contains(log, " stdout F tial\n") {
		t.Errorf("talker's log:\n%s", log)
	}
	if !strings.Contains(log, " stdout P par\n") && !strings.Contains(log, " stdout F partial\n") {
		t.Errorf("talker's log lost the line begun before the refresh:\n%s", log)
	}
	t.Logf("talker log:\n%s", log)
	// a call wakes the Go supervisor; it goes lean again afterwards
	if out, code := p.exec("talker", "echo", "hi"); code != 0 || out != "hi\n" {
		t.Errorf("exec after lean: %q %d", out, code)
	}
	p.waitImage("lean")
	sts, err := c.Status(ctx(t))
	if err != nil || len(sts) != 2 || sts[0].State != schema.AppRunning {
		t.Fatalf("status after lean: %v %+v", err, sts)
	}
	// stdin and a tty across images
	attachCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	attached := make(chan error, 1)
	go func() {
		attached <- c.Attach(attachCtx, control.AttachRequest{App: "ttyapp", Stdin: strings.NewReader("hello\n"), Stdout: io.Discard, TTY: true})
	}()
	p.waitLog("ttyapp", "stdout F tty:hello")
	cancel()
	<-attached
	// the other calls on a lean supervisor
	p.waitImage("lean")
	if err := c.ReopenLog(ctx(t), "talker"); err != nil {
		t.Errorf("reopen-log after lean: %v", err)
	}
	p.waitImage("lean")
	mem := int64(64 << 20)
	if err := c.UpdateResources(ctx(t), "talker", &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &mem}}); err != nil {
		t.Errorf("update after lean: %v", err)
	}
	p.waitImage("lean")
	if out, _ := p.exec("talker", "cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes"); strings.TrimSpace(out) != "67108864" {
		if out2, _ := p.exec("talker", "cat", "/sys/fs/cgroup/memory.max"); strings.TrimSpace(out2) != "67108864" {
			t.Errorf("memory limit after the update: %q %q", out, out2)
		}
	}
	p.waitImage("lean")
	p.waitLog("talker", "stdout F tick12")
	// an app that exits while the supervisor is lean: its status is recorded
	if err := c.StartApp(ctx(t), "short"); err != nil {
		t.Fatal(err)
	}
	p.waitImage("lean")
	p.waitLog("short", "stdout F done")
	deadline := time.Now().Add(10 * time.Second)
	for p.status("short").State != schema.AppExited && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if st := p.status("short"); st.State != schema.AppExited || st.ExitCode != 3 {
		t.Errorf("short after its exit: %+v", st)
	}
	// an exit noticed by the lean image
	p.waitImage("lean")
	talker := p.status("talker")
	unix.Kill(talker.Pid, unix.SIGKILL)
	deadline = time.Now().Add(10 * time.Second)
	for p.status("talker").State != schema.AppExited && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if st := p.status("talker"); st.State != schema.AppExited || st.ExitCode != 137 {
		t.Errorf("talker killed while lean: %+v", st)
	}
	// stop and remove on a lean supervisor
	p.waitImage("lean")
	if err := c.StartApp(ctx(t), "sleeper"); err != nil {
		t.Fatal(err)
	}
	p.waitImage("lean")
	if err := c.StopApp(ctx(t), "sleeper", 5*time.Second); err != nil {
		t.Errorf("stop after lean: %v", err)
	}
	if st := p.status("sleeper"); st.State != schema.AppExited || st.ExitCode != 143 {
		t.Errorf("sleeper stopped: %+v", st)
	}
	p.waitImage("lean")
	if err := c.RemoveApp(ctx(t), "sleeper"); err != nil {
		t.Errorf("remove after lean: %v", err)
	}
	// SIGTERM to the lean image stops the pod
	p.waitImage("lean")
	if err := p.cmd.Process.Signal(unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitExit(15 * time.Second)
	if st := p.status("ttyapp"); st.State != schema.AppExited {
		t.Errorf("ttyapp after SIGTERM: %+v", st)
	}
	if strings.Contains(p.log(), "level=WARN") || strings.Contains(p.log(), "level=ERROR") {
		t.Errorf("stage1.log has warnings:\n%s", p.log())
	}
}

// TestLeanStopSignal: SIGTERM stops the pod whenever it comes around a
// refresh (Go, exec, lean, resume): none is lost on the way.
func TestLeanStopSignal(t *testing.T) {
	rounds := 40
	if s := os.Getenv("RKT_LEAN_SIGNAL_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	for i := 0; i < rounds; i++ {
		p := newPod(t, nil)
		p.args = []string{"--refresh-delay=1ms"}
		p.mustStart(modeSandbox)
		time.Sleep(time.Duration(i%20) * 200 * time.Microsecond)
		if err := p.cmd.Process.Signal(unix.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: SIGTERM lost; the supervisor runs as %s", i, p.image())
		}
		if !p.cmd.ProcessState.Success() {
			t.Errorf("round %d: the supervisor did not stop the pod: %v\n%s", i, p.cmd.ProcessState, p.log())
		}
	}
}

// TestResumeStopSignal: SIGTERM right after a call woke the lean image
// stops the pod, however far `stage1 resume` got in starting (before the
// Go runtime's start, during it, after it): it is never killed by it.
func TestResumeStopSignal(t *testing.T) {
	const rounds = 48
	for i := 0; i < rounds; i++ {
		p := newPod(t, nil)
		p.args = []string{"--refresh-delay=20ms"}
		p.mustStart(modeSandbox)
		p.waitImage("lean")
		go p.client.Status(context.Background()) // wakes it: `stage1 resume`
		delay := time.Duration(i%24) * 250 * time.Microsecond
		time.Sleep(delay)
		if err := p.cmd.Process.Signal(unix.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: SIGTERM %v after the call lost; the supervisor runs as %s", i, delay, p.image())
		}
		if !p.cmd.ProcessState.Success() {
			t.Errorf("round %d: SIGTERM %v after the call: %v\n%s", i, delay, p.cmd.ProcessState, p.log())
		}
	}
}
