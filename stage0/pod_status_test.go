package stage0

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/rkt/rkt/pkg/lock"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

// deadSupervisorPod makes a pod in run/ whose supervisor died (SIGKILL)
// while its app ran: the app's status still says running, stage1.pid names
// no live process and the pod lock is free.
func deadSupervisorPod(t *testing.T, rt *Runtime) (*pod, time.Time) {
	t.Helper()
	ctx := context.Background()
	uuid, err := rt.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "busybox", Name: "app"}}})
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
	started := time.Now().Add(-time.Minute).UTC()
	if err := os.WriteFile(schema.PodDir(p.dir).Stage1PID(), []byte("999999999\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	st := &schema.AppStatus{Name: "app", State: schema.AppRunning, Pid: 999999998, CreatedAt: started, StartedAt: started}
	if err := control.WriteAppStatus(p.dir, st); err != nil {
		t.Fatal(err)
	}
	return p, started
}

// TestStatusOfDeadSupervisor: the apps of a supervisor that died unseen get
// a finish time, recorded when the death is first found, and the same on
// every later read.
func TestStatusOfDeadSupervisor(t *testing.T) {
	rt := newTestRuntime(t)
	p, started := deadSupervisorPod(t, rt)
	ctx := context.Background()
	ps, err := rt.Status(ctx, p.uuid)
	if err != nil {
		t.Fatal(err)
	}
	a := ps.Apps[0]
	if ps.State != PodExited || a.State != schema.AppExited || a.ExitCode != 137 || a.Reason != control.ReasonSupervisorDied {
		t.Fatalf("pod %s app %+v; want exited, app exited 137 %s", ps.State, a.AppStatus, control.ReasonSupervisorDied)
	}
	if !a.FinishedAt.After(started) || a.FinishedAt.After(time.Now()) {
		t.Fatalf("finished at %v, started at %v: want between the start and now", a.FinishedAt, started)
	}
	onDisk, err := control.ReadAppStatus(p.dir, "app")
	if err != nil {
		t.Fatal(err)
	}
	if !onDisk.FinishedAt.Equal(a.FinishedAt) || onDisk.State != schema.AppExited {
		t.Errorf("recorded status %+v; want exited at %v", onDisk, a.FinishedAt)
	}
	time.Sleep(10 * time.Millisecond)
	ps2, err := rt.Status(ctx, p.uuid)
	if err != nil {
		t.Fatal(err)
	}
	if got := ps2.Apps[0].FinishedAt; !got.Equal(a.FinishedAt) {
		t.Errorf("second read: finished at %v, first read %v", got, a.FinishedAt)
	}
	if !ps2.FinishedAt.Equal(a.FinishedAt) {
		t.Errorf("pod finished at %v, want its app's %v", ps2.FinishedAt, a.FinishedAt)
	}
}

// TestStatusOfDeadSupervisorBeingCleaned: while someone holds the pod lock
// (a stop or GC, which records the death itself) the status is not written
// but still has a finish time.
func TestStatusOfDeadSupervisorBeingCleaned(t *testing.T) {
	rt := newTestRuntime(t)
	p, started := deadSupervisorPod(t, rt)
	l, err := lock.TryExclusive(p.dir, lock.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ps, err := rt.Status(context.Background(), p.uuid)
	if err != nil {
		t.Fatal(err)
	}
	a := ps.Apps[0]
	if a.State != schema.AppExited || a.Reason != control.ReasonSupervisorDied || !a.FinishedAt.After(started) {
		t.Errorf("app %+v; want exited %s after %v", a.AppStatus, control.ReasonSupervisorDied, started)
	}
	if onDisk, _ := control.ReadAppStatus(p.dir, "app"); onDisk == nil || onDisk.State != schema.AppRunning {
		t.Errorf("status written while another process held the pod lock: %+v", onDisk)
	}
}
