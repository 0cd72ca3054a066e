package stage0

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

// waitView polls cond until it holds; the view must see another process's
// change within viewBound.
func waitView(t *testing.T, what string, cond func() bool) {
	t.Helper()
	const viewBound = 2 * time.Second
	deadline := time.Now().Add(viewBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("the view did not see %s within %v", what, viewBound)
		}
		time.Sleep(time.Millisecond)
	}
}

// settleView waits until the view's generation holds for a while: a
// write's events are queued at once, and the view's loop reads them soon
// after.
func settleView(t *testing.T, rt *Runtime) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for g := rt.Generation(); ; g = rt.Generation() {
		time.Sleep(250 * time.Millisecond)
		if rt.Generation() == g {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the view's generation did not settle within 5s")
		}
	}
}

// TestViewSeesOtherProcesses: a Runtime with Watch sees what another
// Runtime (another process: the CLI, stage1) does to the pods on disk.
func TestViewSeesOtherProcesses(t *testing.T) {
	dir := t.TempDir()
	svc, err := New(Config{DataDir: dir, Images: fakeImages{}, Stage1Path: "/nonexistent/stage1", Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	cli, err := New(Config{DataDir: dir, Images: fakeImages{}, Stage1Path: "/nonexistent/stage1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if l, err := svc.List(ctx); err != nil || len(l) != 0 {
		t.Fatalf("List = %v, %v; want none", l, err)
	}
	uuid, err := cli.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "busybox", Name: "app"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitView(t, "a new pod", func() bool {
		l, err := svc.List(ctx)
		return err == nil && len(l) == 1 && l[0].UUID == uuid && l[0].State == PodPrepared
	})
	if ps, _ := svc.Status(ctx, uuid); ps.State != PodPrepared || ps.Apps[0].State != schema.AppCreated {
		t.Fatalf("status %s app %s; want prepared, created", ps.State, ps.Apps[0].State)
	}

	// another process moves it and stage1 records its app's exit
	p, err := cli.findPod(uuid)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.move(p, dirRun); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := control.WriteAppStatus(p.dir, &schema.AppStatus{Name: "app", State: schema.AppExited, ExitCode: 3,
		StartedAt: now, FinishedAt: now}); err != nil {
		t.Fatal(err)
	}
	waitView(t, "an app's exit", func() bool {
		ps, err := svc.Status(ctx, uuid)
		return err == nil && ps.State == PodExited && ps.Apps[0].State == schema.AppExited && ps.Apps[0].ExitCode == 3
	})

	// and collects and removes it
	if err := cli.move(p, dirExitedGarbage); err != nil {
		t.Fatal(err)
	}
	waitView(t, "a move", func() bool {
		ps, err := svc.Status(ctx, uuid)
		return err == nil && ps.State == PodExitedGarbage
	})
	if err := os.RemoveAll(p.dir); err != nil {
		t.Fatal(err)
	}
	waitView(t, "a removal", func() bool {
		_, err := svc.Status(ctx, uuid)
		l, lerr := svc.List(ctx)
		return errors.Is(err, ErrPodNotFound) && lerr == nil && len(l) == 0
	})
}

// TestViewReadsOwnWrites: a change made through the Runtime with the view
// is seen by the next call, with no wait.
func TestViewReadsOwnWrites(t *testing.T) {
	rt, err := New(Config{DataDir: t.TempDir(), Images: fakeImages{}, Stage1Path: "/nonexistent/stage1", Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		uuid, err := rt.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "busybox", Name: "app"}}})
		if err != nil {
			t.Fatal(err)
		}
		if ps, err := rt.Status(ctx, uuid); err != nil || ps.State != PodPrepared {
			t.Fatalf("after Prepare: %v, %v", ps, err)
		}
		if err := rt.Remove(ctx, uuid, false); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Status(ctx, uuid); !errors.Is(err, ErrPodNotFound) {
			t.Fatalf("after Remove: %v; want not found", err)
		}
		if l, err := rt.List(ctx); err != nil || len(l) != 0 {
			t.Fatalf("after Remove: List = %d pods, %v", len(l), err)
		}
	}
	if _, err := os.Stat(filepath.Join(rt.podsDir(), dirRun)); err != nil {
		t.Fatal(err)
	}
}

// TestViewGeneration: ListGen's generation stays while nothing changes
// (callers keep what they derived from the list) and moves with any
// change, made through the Runtime or by another process.
func TestViewGeneration(t *testing.T) {
	dir := t.TempDir()
	rt, err := New(Config{DataDir: dir, Images: fakeImages{}, Stage1Path: "/nonexistent/stage1", Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	cli, err := New(Config{DataDir: dir, Images: fakeImages{}, Stage1Path: "/nonexistent/stage1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	uuid, err := rt.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "busybox", Name: "app"}}})
	if err != nil {
		t.Fatal(err)
	}
	// the events of Prepare's own writes may still come
	settleView(t, rt)
	var gen uint64
	waitView(t, "a kept list", func() bool {
		l, g, err := rt.ListGen(ctx)
		gen = g
		return err == nil && len(l) == 1 && g != 0
	})
	for i := 0; i < 3; i++ {
		if _, again, _ := rt.ListGen(ctx); again != gen || rt.Generation() != gen {
			t.Fatalf("generation moved with no change: %d, %d -> %d", gen, again, rt.Generation())
		}
	}
	// another process changes the pod
	p, err := cli.findPod(uuid)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.move(p, dirRun); err != nil {
		t.Fatal(err)
	}
	waitView(t, "a move", func() bool { return rt.Generation() != gen })
	waitView(t, "the moved pod", func() bool {
		l, g, err := rt.ListGen(ctx)
		gen = g
		return err == nil && len(l) == 1 && l[0].State != PodPrepared && g != 0
	})
	// a change through the Runtime is seen at once
	if _, err := rt.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "busybox", Name: "app"}}}); err != nil {
		t.Fatal(err)
	}
	if rt.Generation() == gen {
		t.Fatalf("generation %d unchanged after Prepare", gen)
	}
}

// TestViewListDuringScan: a list made while another caller's scan (the
// first, at start) is still reading the disk answers with the pods on disk
// (it scans too) rather than without them. A restarted kubelet-service
// once listed no sandbox while its stats loop held the first scan, and the
// kubelet never stopped a pod it could not see.
func TestViewListDuringScan(t *testing.T) {
	dir := t.TempDir()
	cli, err := New(Config{DataDir: dir, Images: fakeImages{}, Stage1Path: "/nonexistent/stage1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	uuid, err := cli.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "busybox", Name: "app"}}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := newPodView(cli)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.close)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	v.scanning = func() { // holds the first scan only
		held := false
		once.Do(func() { held = true })
		if held {
			close(entered)
			<-release
		}
	}
	type listed struct {
		pods []*PodStatus
		err  error
	}
	first := make(chan listed, 1)
	go func() {
		pods, _, err := v.list()
		first <- listed{pods, err}
	}()
	<-entered
	check := func(what string, pods []*PodStatus, err error) {
		t.Helper()
		if err != nil || len(pods) != 1 || pods[0].UUID != uuid {
			t.Fatalf("%s = %d pods (%v), want pod %s", what, len(pods), err, uuid)
		}
	}
	pods, _, err := v.list()
	check("a list during the first scan", pods, err)
	close(release)
	l := <-first
	check("the first list", l.pods, l.err)
}

// TestViewAppSpec: an app's spec is read once and kept across changes of
// its pod while its file is the same; a new file is read again.
func TestViewAppSpec(t *testing.T) {
	rt, err := New(Config{DataDir: t.TempDir(), Images: fakeImages{}, Stage1Path: "/nonexistent/stage1", Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	ctx := context.Background()
	uuid, err := rt.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "busybox", Name: "app"}}})
	if err != nil {
		t.Fatal(err)
	}
	// the events of Prepare's own writes may still come: kept once they did
	waitView(t, "a kept list", func() bool { _, g, err := rt.ListGen(ctx); return err == nil && g != 0 })
	status := func() *PodStatus {
		t.Helper()
		ps, err := rt.Status(ctx, uuid)
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	spec := func() *specs.Spec {
		t.Helper()
		s, err := rt.AppSpec(uuid, "app")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ps := status()
	// stage0 writes it when it runs the pod: here, by hand (atomically, as stage0 does)
	path := schema.PodDir(ps.Dir).App("app").Spec()
	writeSpec := func(hostname string) {
		t.Helper()
		b, err := json.Marshal(&specs.Spec{Version: specs.Version, Hostname: hostname})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+".new", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	writeSpec("first")
	settleView(t, rt)
	ps = status()
	first := spec()
	if again := spec(); again != first {
		t.Fatal("the spec was read again with no change")
	}

	rt.changed(uuid) // the pod changed, not its spec
	if ps2 := status(); ps2 == ps {
		t.Fatal("the status was not read again after a change")
	}
	if again := spec(); again != first {
		t.Fatal("the spec was read again after a change of its pod only")
	}

	writeSpec("changed")
	waitView(t, "a new spec", func() bool { status(); return spec().Hostname == "changed" })
	if again := spec(); again.Hostname != "changed" {
		t.Fatalf("spec hostname %q after the change; want changed", again.Hostname)
	}
	// the spec stage0 writes is kept as written
	writeSpec("written")
	settleView(t, rt)
	written := &specs.Spec{Version: specs.Version, Hostname: "written"}
	rt.view.keepSpec(uuid, "app", written, path)
	status()
	if again := spec(); again != written {
		t.Fatalf("spec %q after keepSpec; want the spec kept", again.Hostname)
	}
	if _, err := rt.AppSpec(uuid, "nope"); !errors.Is(err, ErrAppNotFound) {
		t.Fatalf("AppSpec of a missing app: %v; want ErrAppNotFound", err)
	}
}

// TestViewDataDirReplaced: when the pods' directories are replaced under a
// running service (the data dir restored, moved aside, its filesystem
// remounted), the view serves what is on disk now: not the pods it knew
// under the old directories, and the pods other processes make in the new
// ones.
func TestViewDataDirReplaced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rkt")
	svc, err := New(Config{DataDir: dir, Images: fakeImages{}, Stage1Path: "/nonexistent/stage1", Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	ctx := context.Background()
	old, err := svc.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "busybox", Name: "app"}}})
	if err != nil {
		t.Fatal(err)
	}
	if l, err := svc.List(ctx); err != nil || len(l) != 1 {
		t.Fatalf("List = %v, %v; want the one pod", l, err)
	}

	// the data dir is replaced by an empty one; the CLI prepares a pod in it
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	cli, err := New(Config{DataDir: dir, Images: fakeImages{}, Stage1Path: "/nonexistent/stage1"})
	if err != nil {
		t.Fatal(err)
	}
	uuid, err := cli.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "busybox", Name: "app"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitView(t, "the replaced data dir", func() bool {
		l, err := svc.List(ctx)
		return err == nil && len(l) == 1 && l[0].UUID == uuid
	})
	if _, err := svc.Status(ctx, old); !errors.Is(err, ErrPodNotFound) {
		t.Fatalf("Status of a pod of the old data dir: %v; want not found", err)
	}
}
