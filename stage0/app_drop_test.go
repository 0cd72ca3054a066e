package stage0

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/tests/testutil"
)

// rawApps lists the apps of a pod manifest as written.
func rawApps(t *testing.T, p *pod) []string {
	t.Helper()
	b, err := os.ReadFile(p.layout().Manifest())
	if err != nil {
		t.Fatal(err)
	}
	var pm schema.PodManifest
	if err := json.Unmarshal(b, &pm); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range pm.Apps {
		names = append(names, a.Name+"="+a.Image.ID)
	}
	return names
}

func statusApps(t *testing.T, rt *Runtime, uuid string) []string {
	t.Helper()
	ps, err := rt.Status(context.Background(), uuid)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range ps.Apps {
		names = append(names, a.App.Name)
	}
	return names
}

// TestRemovedAppStaysRemoved: RemoveApp returns once the app's directory
// left apps/ (durably); the manifest is rewritten after. A crash in
// between (here the rewrite fails: the pod directory is immutable, and
// the runtime is dropped) leaves the app listed without its directory: it
// does not come back, in that runtime or the next, and the next change of
// the manifest drops it.
func TestRemovedAppStaysRemoved(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (an immutable directory)")
	}
	ctx := context.Background()
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Images: fakeImages{}, Stage1Path: "/nonexistent/stage1", Watch: true}
	rt, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	uuid, err := rt.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "a", Name: "a"}, {Image: "b", Name: "b"}, {Image: "c", Name: "c"}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := rt.findPod(uuid)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.RemoveApp(ctx, uuid, "a"); err != nil {
		t.Fatal(err)
	}
	rt.waitRemovals(uuid)
	if got := rawApps(t, p); !slices.Equal(got, []string{"b=sha256:b", "c=sha256:c"}) {
		t.Fatalf("manifest after a removal: %v", got)
	}

	testutil.SetImmutable(t, p.dir, true)
	t.Cleanup(func() { testutil.SetImmutable(t, p.dir, false) })
	if err := rt.RemoveApp(ctx, uuid, "b"); err != nil {
		t.Fatalf("removal whose manifest rewrite fails: %v", err)
	}
	rt.waitRemovals(uuid)
	testutil.SetImmutable(t, p.dir, false)
	if got := rawApps(t, p); !slices.Equal(got, []string{"b=sha256:b", "c=sha256:c"}) {
		t.Fatalf("the manifest was rewritten (%v): the test missed the window", got)
	}
	if _, err := os.Lstat(string(p.appDir("b"))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the removed app's directory is still in apps/: %v", err)
	}
	if got := statusApps(t, rt, uuid); !slices.Equal(got, []string{"c"}) {
		t.Errorf("apps after the removal: %v", got)
	}
	rt.Close()

	rt2, err := New(cfg) // the node after a crash
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	if got := statusApps(t, rt2, uuid); !slices.Equal(got, []string{"c"}) {
		t.Errorf("apps after a restart: %v", got)
	}
	if inUse, err := rt2.ImagesInUse(); err != nil || inUse["sha256:b"] || !inUse["sha256:c"] {
		t.Errorf("images in use: %v %v", inUse, err)
	}
	p2, err := rt2.findPod(uuid)
	if err != nil {
		t.Fatal(err)
	}
	if got := rawApps(t, p2); len(got) != 2 {
		t.Fatalf("manifest rewritten by a reader: %v", got)
	}
	if err := rt2.RemoveApp(ctx, uuid, "b"); !errors.Is(err, ErrAppNotFound) {
		t.Errorf("removing it again: %v, want ErrAppNotFound", err)
	}
	if got := rawApps(t, p2); !slices.Equal(got, []string{"c=sha256:c"}) {
		t.Errorf("manifest after a change under its lock: %v", got)
	}
	ml, err := rt2.lockManifest(ctx, p2)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = rt2.addAppRecord(ctx, p2, AppOptions{Name: "b", Image: "b2"})
	ml.Close()
	if err != nil {
		t.Fatalf("adding an app of the same name: %v", err)
	}
	if got := rawApps(t, p2); !slices.Equal(got, []string{"c=sha256:c", "b=sha256:b2"}) {
		t.Errorf("manifest after the new app: %v", got)
	}
	if left, _ := os.ReadDir(p2.layout().RemovedApps()); len(left) != 0 {
		t.Errorf("left in %s: %v", p2.layout().RemovedApps(), left)
	}
}

// TestBackToBackRemovals: removals and an add that follow each other
// without waiting (each removal's manifest rewrite runs after its call
// returned, holding the manifest lock) lose no update.
func TestBackToBackRemovals(t *testing.T) {
	ctx := context.Background()
	rt, err := New(Config{DataDir: t.TempDir(), Images: fakeImages{}, Stage1Path: "/nonexistent/stage1", Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	uuid, err := rt.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "a", Name: "a"}, {Image: "b", Name: "b"}, {Image: "c", Name: "c"}, {Image: "d", Name: "d"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, app := range []string{"a", "b", "c"} {
		if err := rt.RemoveApp(ctx, uuid, app); err != nil {
			t.Fatal(err)
		}
	}
	p, err := rt.findPod(uuid)
	if err != nil {
		t.Fatal(err)
	}
	ml, err := rt.lockManifest(ctx, p) // as AddApp does
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = rt.addAppRecord(ctx, p, AppOptions{Name: "e", Image: "e"})
	ml.Close()
	if err != nil {
		t.Fatal(err)
	}
	rt.waitRemovals(uuid)
	if got := rawApps(t, p); !slices.Equal(got, []string{"d=sha256:d", "e=sha256:e"}) {
		t.Errorf("manifest after three removals and an add: %v", got)
	}
}

// TestImagesInUseFromView: the service's ImagesInUse (from its view, each
// app's record read once) answers what a read of every pod on disk does,
// as apps with image volumes are replaced by others of their name and
// removed.
func TestImagesInUseFromView(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rt, err := New(Config{DataDir: dir, Images: fakeImages{}, Stage1Path: "/nonexistent/stage1", Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	check := func(when string, want ...string) {
		t.Helper()
		got, err := rt.ImagesInUse()
		if err != nil {
			t.Fatal(err)
		}
		disk, err := ImagesInUse(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, disk) {
			t.Errorf("%s: %v from the view, %v from disk", when, got, disk)
		}
		var ids []string
		for id := range got {
			ids = append(ids, strings.TrimPrefix(id, "sha256:"))
		}
		slices.Sort(ids)
		if !slices.Equal(ids, want) {
			t.Errorf("%s: images in use %v, want %v", when, ids, want)
		}
	}
	vol := func(img string) []Mount { return []Mount{{Image: img, Destination: "/data"}} }
	uuid, err := rt.Prepare(ctx, PrepareOptions{Apps: []AppOptions{
		{Image: "a", Name: "a", Mounts: vol("vol1")}, {Image: "b", Name: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	check("prepared", "a", "b", "vol1")
	if err := rt.RemoveApp(ctx, uuid, "a"); err != nil {
		t.Fatal(err)
	}
	rt.waitRemovals(uuid)
	p, err := rt.findPod(uuid)
	if err != nil {
		t.Fatal(err)
	}
	ml, err := rt.lockManifest(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = rt.addAppRecord(ctx, p, AppOptions{Name: "a", Image: "a2", Mounts: vol("vol2")})
	ml.Close()
	if err != nil {
		t.Fatal(err)
	}
	rt.changed(uuid)
	check("app a replaced", "a2", "b", "vol2")
	if err := rt.RemoveApp(ctx, uuid, "a"); err != nil {
		t.Fatal(err)
	}
	rt.waitRemovals(uuid)
	check("app a removed", "b")
	if err := rt.Remove(ctx, uuid, false); err != nil {
		t.Fatal(err)
	}
	check("pod removed")
}
