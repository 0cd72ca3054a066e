package stage0

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/rkt/rkt/pkg/lock"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

// runningAppPod makes a pod that reads as running (in run/, its lock held
// as its supervisor holds it) whose app "app" runs as pid.
func runningAppPod(t *testing.T, rt *Runtime, pid int) *pod {
	t.Helper()
	uuid, err := rt.Prepare(context.Background(), PrepareOptions{Apps: []AppOptions{{Image: "busybox", Name: "app"}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := rt.findPod(uuid)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.move(p, dirRun); err != nil {
		t.Fatal(err)
	}
	if p, err = rt.findPod(uuid); err != nil {
		t.Fatal(err)
	}
	l, err := lock.TryExclusive(p.dir, lock.Dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	setAppPid(t, p, pid, time.Now())
	return p
}

func setAppPid(t *testing.T, p *pod, pid int, started time.Time) {
	t.Helper()
	st := &schema.AppStatus{Name: "app", State: schema.AppRunning, Pid: pid, CreatedAt: started, StartedAt: started}
	if err := control.WriteAppStatus(p.dir, st); err != nil {
		t.Fatal(err)
	}
}

// sleeper starts a process that lives until the test ends.
func sleeper(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// TestAppStatsOfExitedProcess: an app whose process has exited (and been
// reaped by its supervisor) before its status says so is not running: its
// stats call must say ErrNotRunning, which the CRI's List*Stats skip,
// rather than fail (and fail the whole list with it).
func TestAppStatsOfExitedProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	rt := newTestRuntime(t)
	p := runningAppPod(t, rt, cmd.Process.Pid)
	_, err := rt.AppStats(context.Background(), p.uuid, "app")
	if !errors.Is(err, ErrNotRunning) {
		t.Fatalf("stats of an app whose process is gone: %v; want ErrNotRunning", err)
	}
}

// TestAppStatsOfReplacedApp: the stats cache of a Runtime with Watch must
// not answer for an app with the stats of the one it replaced (removed and
// added again with the same name, another process).
func TestAppStatsOfReplacedApp(t *testing.T) {
	rt, err := New(Config{DataDir: t.TempDir(), Images: fakeImages{}, Stage1Path: "/nonexistent/stage1", Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	ctx := context.Background()
	old := sleeper(t)
	p := runningAppPod(t, rt, old)
	waitView(t, "the running app", func() bool {
		ps, err := rt.Status(ctx, p.uuid)
		return err == nil && ps.State == PodRunning && len(ps.Apps) == 1 && ps.Apps[0].Pid == old
	})
	s1, err := rt.AppStats(ctx, p.uuid, "app")
	if err != nil {
		t.Fatal(err)
	}
	// the app is replaced by another one of the same name
	replaced := time.Now()
	cur := sleeper(t)
	setAppPid(t, p, cur, replaced)
	waitView(t, "the new app", func() bool {
		ps, err := rt.Status(ctx, p.uuid)
		return err == nil && len(ps.Apps) == 1 && ps.Apps[0].Pid == cur
	})
	s2, err := rt.AppStats(ctx, p.uuid, "app")
	if err != nil {
		t.Fatal(err)
	}
	if s2 == s1 || s2.Timestamp.Before(replaced) {
		t.Errorf("stats of the new app read at %v, before it replaced the old one (%v): the old app's", s2.Timestamp, replaced)
	}
}
