package stage0

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rkt/rkt/pkg/lock"
	"github.com/rkt/rkt/pkg/schema"
)

func TestPodExists(t *testing.T) {
	rt, err := New(Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.ensureDirs(); err != nil {
		t.Fatal(err)
	}
	const (
		running  = "aaaaaaaa-0000-4000-8000-000000000001"
		creating = "aaaaaaaa-0000-4000-8000-000000000002"
		garbage  = "aaaaaaaa-0000-4000-8000-000000000003"
		gone     = "aaaaaaaa-0000-4000-8000-000000000004"
	)
	for _, d := range []string{
		filepath.Join(rt.stateDir(dirRun), running),
		filepath.Join(rt.stateDir(dirPrepare), newPodPrefix+creating),
		filepath.Join(rt.stateDir(dirExitedGarbage), garbage),
	} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		id   string
		want bool
	}{
		{running, true},
		{creating, true},
		{garbage, true},
		{gone, false},
		{"not-a-pod-uuid", true}, // not stage0's to release
	}
	for _, tc := range tests {
		if got := rt.podExists(tc.id); got != tc.want {
			t.Errorf("podExists(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

// TestGCDebrisOnly: the service's GC removes what crashes left (aborted
// prepares, interrupted creations and deletions) and nothing that is locked
// (being created or deleted right now), recent, or owned by someone.
func TestGCDebrisOnly(t *testing.T) {
	rt := newTestRuntime(t)
	ctx := context.Background()
	if err := rt.ensureDirs(); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	mk := func(state, name string, age time.Time, locked bool) string {
		t.Helper()
		d := filepath.Join(rt.stateDir(state), name)
		if err := os.MkdirAll(filepath.Join(d, "apps"), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(d, age, age); err != nil {
			t.Fatal(err)
		}
		if locked {
			l, err := lock.TryExclusive(d, lock.Dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
		}
		return d
	}
	const u = "bbbbbbbb-0000-4000-8000-0000000000"
	gone := []string{
		mk(dirPrepare, u+"01", old, false),              // aborted prepare
		mk(dirPrepare, newPodPrefix+u+"02", old, false), // creation died before the rename
		mk(dirGarbage, u+"03", old, false),              // deletion died half-way
	}
	kept := []string{
		mk(dirPrepare, u+"11", old, true),                      // being prepared
		mk(dirPrepare, newPodPrefix+u+"12", old, true),         // being created
		mk(dirPrepare, newPodPrefix+u+"13", time.Now(), false), // about to be locked by its creator
		mk(dirGarbage, u+"14", old, true),                      // being deleted
		mk(dirRun, u+"15", old, false),                         // exited: the kubelet's to remove
		mk(dirRun, u+"18", old, true),                          // running, or starting
		mk(dirExitedGarbage, u+"16", old, false),               // the CLI's rkt gc's
		mk(dirPrepared, u+"17", old, false),                    // rkt run-prepare's
	}
	started := filepath.Join(rt.stateDir(dirRun), u+"19") // exited after its start
	kept = append(kept, mk(dirRun, u+"19", old, false))
	if err := os.WriteFile(schema.PodDir(started).Started(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := rt.GC(ctx, GCOptions{DebrisOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for u, err := range res.Errors {
		t.Errorf("pod %s: %v", u, err)
	}
	// of the pods in run/, only the one cut off while starting (not
	// marked started, unlocked) has its resources released; all stay
	if want := []string{u + "15"}; !slices.Equal(res.Released, want) {
		t.Errorf("released %v, want %v", res.Released, want)
	}
	for _, n := range []string{"15", "18", "19"} {
		_, err := os.Lstat(schema.PodDir(filepath.Join(rt.stateDir(dirRun), u+n)).Cleaned())
		if (err == nil) != (n == "15") {
			t.Errorf("pod %s marked clean: %v", u+n, err == nil)
		}
	}
	for _, d := range gone {
		if _, err := os.Lstat(d); err == nil {
			t.Errorf("%s was left", d)
		}
	}
	for _, d := range kept {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s was removed", d)
		}
	}
}

// TestGCLeavesOwnedPods: pods Owned says a long-lived owner removes (the
// kubelet's sandboxes) are left to it by a full GC, in every state the
// CLI's pods are collected from; the others are collected.
func TestGCLeavesOwnedPods(t *testing.T) {
	rt := newTestRuntime(t)
	ctx := context.Background()
	prepare := func(annos map[string]string) string {
		t.Helper()
		uuid, err := rt.Prepare(ctx, PrepareOptions{PodOptions: PodOptions{Annotations: annos}, Apps: []AppOptions{{Image: "busybox"}}})
		if err != nil {
			t.Fatal(err)
		}
		return uuid
	}
	owned := map[string]string{"owner": "svc"}
	old := time.Now().Add(-48 * time.Hour)
	age := func(state, uuid string) string {
		t.Helper()
		d := filepath.Join(rt.stateDir(state), uuid)
		if state != dirPrepared {
			if err := os.Rename(filepath.Join(rt.stateDir(dirPrepared), uuid), d); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
		return d
	}
	kept := []string{age(dirPrepared, prepare(owned)), age(dirExitedGarbage, prepare(owned))}
	gone := []string{age(dirPrepared, prepare(nil))} // (an exited one would need stage1 gc)
	res, err := rt.GC(ctx, GCOptions{GracePeriod: time.Minute, ExpirePrepared: time.Hour,
		Owned: func(a map[string]string) bool { return a["owner"] == "svc" }})
	if err != nil {
		t.Fatal(err)
	}
	for u, err := range res.Errors {
		t.Errorf("pod %s: %v", u, err)
	}
	for _, d := range kept {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("owned pod %s collected: %v", d, err)
		}
	}
	for _, d := range gone {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("pod %s not collected", d)
		}
	}
}

// TestGCRemovesStaleWriteTemps: the temporary files of atomic writes cut
// off before their rename (a stage0 or stage1 killed while writing a pod
// manifest or an app's status) in the directories of pods that stay,
// running or prepared, and of their apps, are removed by the service's
// GC (DebrisOnly) and by rkt gc once stale; recent ones, maybe still being
// written, are kept, and the pods keep the age their directory's mtime
// gives them (the GC's grace periods count from it).
func TestGCRemovesStaleWriteTemps(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts GCOptions
	}{
		{"service", GCOptions{DebrisOnly: true}},
		{"rkt gc", GCOptions{GracePeriod: time.Hour, ExpirePrepared: 48 * time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newTestRuntime(t)
			ctx := context.Background()
			uuid, err := rt.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "busybox"}}})
			if err != nil {
				t.Fatal(err)
			}
			prepared := schema.PodDir(filepath.Join(rt.stateDir(dirPrepared), uuid))
			running := schema.PodDir(filepath.Join(rt.stateDir(dirRun), "cccccccc-0000-4000-8000-000000000001"))
			if err := os.MkdirAll(string(running.App("app")), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(running.Started(), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := lock.TryExclusive(string(running), lock.Dir) // as its stage1 holds it
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			old := time.Now().Add(-time.Hour)
			var stale, fresh []string
			for _, p := range []schema.PodDir{prepared, running} {
				app := p.App("app")
				if p == prepared {
					app = p.App("busybox")
				}
				for _, f := range []string{p.Manifest(), app.Status()} {
					tmp := filepath.Join(filepath.Dir(f), "."+filepath.Base(f)+".tmp")
					stale = append(stale, tmp+"2840184913")
					fresh = append(fresh, tmp+"117325089")
				}
			}
			for i := range stale {
				for _, p := range []string{stale[i], fresh[i]} {
					if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Chtimes(stale[i], old, old); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range []schema.PodDir{prepared, running} {
				if err := os.Chtimes(string(p), old, old); err != nil {
					t.Fatal(err)
				}
			}
			res, err := rt.GC(ctx, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for u, err := range res.Errors {
				t.Errorf("pod %s: %v", u, err)
			}
			for _, p := range stale {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("stale temporary file %s kept", p)
				}
			}
			for _, p := range fresh {
				if _, err := os.Lstat(p); err != nil {
					t.Errorf("recent temporary file removed: %v", err)
				}
			}
			for _, p := range []schema.PodDir{prepared, running} {
				fi, err := os.Stat(string(p))
				if err != nil {
					t.Fatalf("pod %s removed: %v", p, err)
				}
				if !fi.ModTime().Equal(old) {
					t.Errorf("pod %s dated %v, was %v", p, fi.ModTime(), old)
				}
			}
		})
	}
}
