package stage0

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rkt/rkt/pkg/lock"
	"github.com/rkt/rkt/pkg/schema"
)

// appcPodManifest is a pod manifest as rkt 1.x wrote it.
const appcPodManifest = `{"acKind":"PodManifest","acVersion":"1.30.0","apps":[{"name":"busybox","image":{"name":"example.com/busybox","id":"sha512-0123"},"app":{"exec":["/bin/sh"],"user":"0","group":"0"}}],"volumes":[],"isolators":null,"annotations":[],"ports":[]}`

// TestLegacyPodsLeftAlone: rkt 1.x's pods are neither listed, nor read,
// nor collected; LegacyPods reports them.
func TestLegacyPodsLeftAlone(t *testing.T) {
	rt := newTestRuntime(t)
	ctx := context.Background()
	if err := rt.ensureDirs(); err != nil {
		t.Fatal(err)
	}
	pods := map[string]string{ // uuid -> state dir
		"11111111-0000-4000-8000-000000000001": "embryo",
		"11111111-0000-4000-8000-000000000002": dirPrepare,
		"11111111-0000-4000-8000-000000000003": dirPrepared,
		"11111111-0000-4000-8000-000000000004": dirRun, // exited
		"11111111-0000-4000-8000-000000000005": dirRun, // running (locked)
		"11111111-0000-4000-8000-000000000006": dirExitedGarbage,
		"11111111-0000-4000-8000-000000000007": dirGarbage,
	}
	for uuid, state := range pods {
		d := filepath.Join(rt.podsDir(), state, uuid)
		for _, sub := range []string{"appsinfo/busybox", "stage1/rootfs/opt/stage2/busybox/rootfs"} {
			if err := os.MkdirAll(filepath.Join(d, sub), 0o750); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(schema.PodDir(d).Manifest(), []byte(appcPodManifest), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	l, err := lock.TryExclusive(filepath.Join(rt.stateDir(dirRun), "11111111-0000-4000-8000-000000000005"), lock.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	if list, err := rt.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("List = %d pods, %v; want none", len(list), err)
	}
	_, err = rt.Status(ctx, "11111111-0000-4000-8000-000000000004")
	if !errors.Is(err, ErrPodNotFound) || !strings.Contains(err.Error(), "rkt 1.x") {
		t.Errorf("Status of a rkt 1.x pod: %v", err)
	}
	if _, err := rt.GC(ctx, GCOptions{}); err != nil {
		t.Fatal(err)
	}
	for uuid, state := range pods {
		b, err := os.ReadFile(schema.PodDir(filepath.Join(rt.podsDir(), state, uuid)).Manifest())
		if err != nil || string(b) != appcPodManifest {
			t.Errorf("GC changed rkt 1.x pod %s in %s: %v", uuid, state, err)
		}
	}
	inUse, err := ImagesInUse(rt.cfg.DataDir)
	if err != nil || len(inUse) != 0 {
		t.Errorf("ImagesInUse = %v, %v; want none", inUse, err)
	}
	legacy, err := LegacyPods(rt.cfg.DataDir)
	if err != nil || len(legacy) != len(pods) {
		t.Fatalf("LegacyPods = %+v, %v", legacy, err)
	}
	for _, p := range legacy {
		if p.State != pods[p.UUID] || p.Running != (p.UUID == "11111111-0000-4000-8000-000000000005") ||
			len(p.Apps) != 1 || p.Apps[0] != "busybox (example.com/busybox)" {
			t.Errorf("legacy pod %+v", p)
		}
	}
}

// TestStatsOfPreFSApp: an app made before fs/ keeps its upper dir in the
// app directory; its writable layer is counted there.
func TestStatsOfPreFSApp(t *testing.T) {
	for _, preFS := range []bool{true, false} {
		podDir := t.TempDir()
		appDir := schema.PodDir(podDir).App("app")
		upper := appDir.Upper()
		if preFS {
			upper = appDir.PreFSUpper()
		}
		if err := os.MkdirAll(upper, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(upper, "written"), make([]byte, 64<<10), 0o644); err != nil {
			t.Fatal(err)
		}
		ps := &PodStatus{UUID: "u", State: PodRunning, Dir: podDir, Apps: []AppStatus{{
			AppStatus: schema.AppStatus{Name: "app", State: schema.AppRunning, Pid: os.Getpid()}}}}
		st, err := readAppStats(context.Background(), ps, "app")
		if err != nil {
			t.Fatal(err)
		}
		if st.WritableLayer.Bytes < 64<<10 || st.WritableLayer.Inodes != 2 {
			t.Errorf("%s: writable layer %+v, want 2 inodes, >= 64 KiB", upper, st.WritableLayer)
		}
	}
}
