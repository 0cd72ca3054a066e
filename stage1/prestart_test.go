package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rkt/rkt/pkg/schema"
)

// appPids lists the processes in the app's cgroup.
func (p *testPod) appPids(app string) []int {
	p.t.Helper()
	mgr, err := podCgroupManager(podCgroupPath(&p.manifest) + "/" + app)
	if err != nil {
		p.t.Fatal(err)
	}
	pids, err := cgroupPids(mgr)
	if err != nil {
		p.t.Fatal(err)
	}
	return pids
}

// app returns the manifest of an app of the pod.
func (p *testPod) app(name string) *schema.App {
	for i := range p.manifest.Apps {
		if p.manifest.Apps[i].Name == name {
			return &p.manifest.Apps[i]
		}
	}
	p.t.Fatalf("no app %q", name)
	return nil
}

// TestPrestart: a prestarted app is created, its container's init waiting
// in the app's cgroup and its process not run; StartApp runs it (pipes and
// tty); RemoveApp and the supervisor's exit release prestarted containers
// never started (cleanup checks that no process, cgroup nor runc state is
// left).
func TestPrestart(t *testing.T) {
	p := newPod(t, nil)
	p.mustStart(modeSandbox)
	c := p.client
	p.addApp("pipes", schema.App{}, []string{"sh", "-c", "echo started; exec sleep 1000"}, nil)
	p.addApp("tty", schema.App{TTY: true}, []string{"sh", "-c", "tty; exec sleep 1000"}, nil)
	p.addApp("removed", schema.App{}, []string{"sleep", "1000"}, nil)
	p.addApp("left", schema.App{}, []string{"sleep", "1000"}, nil)
	apps := []string{"pipes", "tty", "removed", "left"}
	for _, a := range apps {
		if a == "left" { // the request sent, its answer read later
			pre, err := c.SendPrestartApp(ctx(t), p.app(a))
			if err == nil {
				err = pre.Wait()
			}
			if err != nil {
				t.Fatalf("prestart %s (sent, then waited for): %v", a, err)
			}
			continue
		}
		if err := c.PrestartApp(ctx(t), p.app(a)); err != nil {
			t.Fatalf("prestart %s: %v", a, err)
		}
	}
	if err := c.PrestartApp(ctx(t), p.app("pipes")); err != nil {
		t.Errorf("second prestart: %v", err)
	}
	sts, err := c.Status(ctx(t)) // waits for the prestarts
	if err != nil || len(sts) != len(apps) {
		t.Fatalf("status: %v %+v", err, sts)
	}
	for _, st := range sts {
		if st.State != schema.AppCreated || st.Pid != 0 {
			t.Errorf("prestarted app's status: %+v", st)
		}
		if pids := p.appPids(st.Name); len(pids) != 1 {
			t.Errorf("app %s: want its container's init alone in its cgroup, got %v", st.Name, pids)
		}
	}
	if b, _ := os.ReadFile(schema.PodDir(p.dir).App("pipes").DefaultLog()); len(b) != 0 {
		t.Errorf("a prestarted app ran: its log has %q", b)
	}
	for _, a := range []string{"pipes", "tty"} {
		if err := c.StartApp(ctx(t), a); err != nil {
			t.Fatalf("start %s: %v", a, err)
		}
	}
	p.waitLog("pipes", "stdout F started")
	// an app prestarted before it is in the pod manifest (stage0 writes
	// the manifest while the container is created)
	p.addApp("late", schema.App{}, []string{"sh", "-c", "echo late; exec sleep 1000"}, nil)
	late := *p.app("late")
	p.manifest.Apps = p.manifest.Apps[:len(p.manifest.Apps)-1]
	p.writeManifest()
	if err := c.PrestartApp(ctx(t), &late); err != nil {
		t.Fatal(err)
	}
	p.manifest.Apps = append(p.manifest.Apps, late)
	p.writeManifest()
	if err := c.StartApp(ctx(t), "late"); err != nil {
		t.Fatal(err)
	}
	p.waitLog("late", "stdout F late")
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(schema.PodDir(p.dir).App("tty").DefaultLog())
		if strings.Contains(string(b), "/dev/pts/") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tty app never logged its terminal: %q", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, a := range []string{"pipes", "tty", "late"} {
		if st := p.status(a); st.State != schema.AppRunning || st.Pid == 0 {
			t.Errorf("started app %s: %+v", a, st)
		}
	}
	p.removePrestarted("removed")
	if err := c.Shutdown(ctx(t), 0); err != nil {
		t.Fatal(err)
	}
	p.waitExit(10 * time.Second)
}

// TestPrestartFailure: a prestart that fails is not an error of its own;
// StartApp tries again and reports the failure.
func TestPrestartFailure(t *testing.T) {
	p := newPod(t, nil)
	p.mustStart(modeSandbox)
	p.addApp("broken", schema.App{}, []string{"true"}, nil)
	if err := os.WriteFile(schema.PodDir(p.dir).App("broken").Spec(), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.client.PrestartApp(ctx(t), p.app("broken")); err != nil {
		t.Fatalf("prestart: %v", err)
	}
	if err := p.client.StartApp(ctx(t), "broken"); err == nil || !strings.Contains(err.Error(), "cannot parse spec") {
		t.Fatalf("start with a corrupt spec: %v", err)
	}
	if st := p.status("broken"); st.State != schema.AppExited || st.Reason != "StartError" {
		t.Errorf("status: %+v", st)
	}
}

// image is what the supervisor runs as: "run", "lean" or "resume".
func (p *testPod) image() string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/cmdline")
	if args := strings.Split(string(b), "\x00"); len(args) > 1 {
		return args[1]
	}
	return ""
}

// stayGo fails if the supervisor goes lean within d.
func (p *testPod) stayGo(d time.Duration) {
	p.t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if img := p.image(); img == "lean" {
			p.t.Fatalf("the supervisor went lean with a prestarted container\n%s", p.log())
		}
	}
}

// TestPrestartIdle: a prestarted container keeps the supervisor in Go past
// its idle delay (the container's init waits on the Go process); started
// after the delay, it runs; removed after the delay, nothing is left; the
// supervisor goes lean once nothing is prestarted.
func TestPrestartIdle(t *testing.T) {
	p := newPod(t, nil)
	p.args = []string{"--refresh-delay=100ms"}
	p.addApp("started", schema.App{}, []string{"sh", "-c", "echo started; exec sleep 1000"}, nil)
	p.addApp("removed", schema.App{}, []string{"sleep", "1000"}, nil)
	p.mustStart(modeSandbox)
	c := p.client
	p.waitImage("lean")
	for _, a := range []string{"started", "removed"} {
		if err := c.PrestartApp(ctx(t), p.app(a)); err != nil {
			t.Fatalf("prestart %s: %v", a, err)
		}
	}
	if _, err := c.Status(ctx(t)); err != nil { // waits for the prestarts
		t.Fatal(err)
	}
	p.stayGo(time.Second)
	for _, a := range []string{"started", "removed"} {
		if pids := p.appPids(a); len(pids) != 1 {
			t.Errorf("app %s: want its container's init waiting, got %v", a, pids)
		}
	}
	if err := c.StartApp(ctx(t), "started"); err != nil {
		t.Fatal(err)
	}
	p.waitLog("started", "stdout F started")
	if st := p.status("started"); st.State != schema.AppRunning || st.Pid == 0 {
		t.Errorf("started app: %+v", st)
	}
	p.stayGo(time.Second)
	p.removePrestarted("removed")
	p.waitImage("lean")
	if st := p.status("started"); st.State != schema.AppRunning {
		t.Errorf("started app after lean: %+v", st)
	}
	if err := c.Shutdown(ctx(t), 0); err != nil {
		t.Fatal(err)
	}
	p.waitExit(10 * time.Second)
	if strings.Contains(p.log(), "level=WARN") || strings.Contains(p.log(), "level=ERROR") {
		t.Errorf("stage1.log has warnings:\n%s", p.log())
	}
}

// removePrestarted removes a prestarted, never started app and checks that
// nothing of it is left.
func (p *testPod) removePrestarted(name string) {
	p.t.Helper()
	if err := p.client.RemoveApp(ctx(p.t), name); err != nil {
		p.t.Fatal(err)
	}
	if pids := p.appPids(name); len(pids) != 0 {
		p.t.Errorf("removed prestarted app left processes %v", pids)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "runc", name)); !os.IsNotExist(err) {
		p.t.Errorf("removed prestarted app left its runc state: %v", err)
	}
}
