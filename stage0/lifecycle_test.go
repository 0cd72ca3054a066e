package stage0

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/rkt/rkt/pkg/lock"
	"github.com/rkt/rkt/pkg/schema"
)

// fakeImages resolves every reference to one image with no layers.
type fakeImages struct{}

func (fakeImages) AppImage(ctx context.Context, ref string) (*Image, error) {
	if ref == "missing" {
		return nil, fmt.Errorf("image %q: not found", ref)
	}
	return &Image{ID: "sha256:" + ref, Name: "example.org/" + ref + ":1", Config: &v1.ConfigFile{Config: v1.Config{Cmd: []string{"/bin/true"}}}}, nil
}

func (fakeImages) Hold(ctx context.Context) (io.Closer, error) { return io.NopCloser(nil), nil }

func newTestRuntime(t *testing.T) *Runtime {
	t.Helper()
	rt, err := New(Config{DataDir: t.TempDir(), Images: fakeImages{}, Stage1Path: "/nonexistent/stage1"})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func TestPrepareStatusRemove(t *testing.T) {
	rt := newTestRuntime(t)
	ctx := context.Background()
	uuid, err := rt.Prepare(ctx, PrepareOptions{
		PodOptions: PodOptions{Annotations: map[string]string{"k": "v"}},
		Apps:       []AppOptions{{Image: "busybox"}, {Image: "busybox"}, {Image: "nginx", Name: "Web.1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := rt.Status(ctx, uuid[:6])
	if err != nil {
		t.Fatal(err)
	}
	if ps.State != PodPrepared || len(ps.Apps) != 3 || ps.Manifest.Annotations["k"] != "v" || ps.Manifest.Hostname != "rkt-"+uuid {
		t.Fatalf("status: %+v", ps)
	}
	names := []string{ps.Apps[0].App.Name, ps.Apps[1].App.Name, ps.Apps[2].App.Name}
	if names[0] != "busybox" || names[1] != "busybox-2" || names[2] != "Web.1" {
		t.Errorf("app names %v", names)
	}
	if ps.Apps[0].State != "created" || ps.Apps[0].ImageRef != "example.org/busybox:1" {
		t.Errorf("app status %+v", ps.Apps[0])
	}
	inUse, err := rt.ImagesInUse()
	if err != nil || !inUse["sha256:busybox"] || !inUse["sha256:nginx"] {
		t.Errorf("images in use: %v %v", inUse, err)
	}
	if err := rt.Stop(ctx, uuid, StopOptions{}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("stop of a prepared pod: %v", err)
	}
	if err := rt.Remove(ctx, uuid, false); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Status(ctx, uuid); !errors.Is(err, ErrPodNotFound) {
		t.Errorf("status after remove: %v", err)
	}
}

func TestPrepareErrorsLeaveNothing(t *testing.T) {
	rt := newTestRuntime(t)
	ctx := context.Background()
	for _, opts := range []PrepareOptions{
		{},
		{Apps: []AppOptions{{Image: "missing"}}},
		{Apps: []AppOptions{{Image: "a", Name: "x"}, {Image: "b", Name: "x"}}},
		{Apps: []AppOptions{{Image: "a", Name: "bad/name"}}},
		{PodOptions: PodOptions{UUID: "not-a-uuid"}, Apps: []AppOptions{{Image: "a"}}},
	} {
		if _, err := rt.Prepare(ctx, opts); err == nil {
			t.Errorf("prepare %+v succeeded", opts)
		}
	}
	pods, err := rt.List(ctx)
	if err != nil || len(pods) != 0 {
		t.Errorf("failed prepares left pods: %v %v", pods, err)
	}
	for _, d := range podStateDirs {
		if e, _ := os.ReadDir(rt.stateDir(d)); len(e) != 0 {
			t.Errorf("%s not empty: %v", d, e)
		}
	}
}

// holdingImages is fakeImages that counts its holds and checks that every
// image is resolved under one.
type holdingImages struct {
	fakeImages
	mu             sync.Mutex
	open, unheld   int
	manifestListed []int // how many apps the pod manifest listed when a hold closed
	dataDir        string
}

func (h *holdingImages) AppImage(ctx context.Context, ref string) (*Image, error) {
	h.mu.Lock()
	if h.open == 0 {
		h.unheld++
	}
	h.mu.Unlock()
	return h.fakeImages.AppImage(ctx, ref)
}

func (h *holdingImages) Hold(ctx context.Context) (io.Closer, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open++
	return closerFunc(func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.open--
		n := -1
		if m, _ := filepath.Glob(filepath.Join(h.dataDir, "pods", dirPrepare, "*", "pod")); len(m) == 1 {
			var pm schema.PodManifest
			if b, err := os.ReadFile(m[0]); err == nil && json.Unmarshal(b, &pm) == nil {
				n = len(pm.Apps)
			}
		}
		h.manifestListed = append(h.manifestListed, n)
		return nil
	}), nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// Images are resolved under a hold of the image source (so that their
// layers are not swept before the pod manifest lists them), released once
// the manifest is written or the prepare failed.
func TestPrepareHoldsImages(t *testing.T) {
	dir := t.TempDir()
	imgs := &holdingImages{dataDir: dir}
	rt, err := New(Config{DataDir: dir, Images: imgs, Stage1Path: "/nonexistent/stage1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := rt.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "a"}, {Image: "b"}}}); err != nil {
		t.Fatal(err)
	}
	if imgs.open != 0 || imgs.unheld != 0 || !reflect.DeepEqual(imgs.manifestListed, []int{1, 2}) {
		t.Errorf("after a prepare: %d holds open, %d images resolved without one, apps in the manifest at each release: %v",
			imgs.open, imgs.unheld, imgs.manifestListed)
	}
	if _, err := rt.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "missing"}}}); err == nil {
		t.Fatal("prepare of a missing image succeeded")
	}
	if imgs.open != 0 {
		t.Errorf("a failed prepare left %d holds open", imgs.open)
	}
}

func TestUUIDPrefixes(t *testing.T) {
	rt := newTestRuntime(t)
	ctx := context.Background()
	a, err := rt.Prepare(ctx, PrepareOptions{PodOptions: PodOptions{UUID: "aaaaaaaa-0000-4000-8000-000000000001"}, Apps: []AppOptions{{Image: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Prepare(ctx, PrepareOptions{PodOptions: PodOptions{UUID: "aaaaaaaa-0000-4000-8000-000000000002"}, Apps: []AppOptions{{Image: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Prepare(ctx, PrepareOptions{PodOptions: PodOptions{UUID: a}, Apps: []AppOptions{{Image: "x"}}}); err == nil {
		t.Error("duplicate UUID accepted")
	}
	for prefix, want := range map[string]error{"aaaa": ErrAmbiguousUUID, "b": ErrPodNotFound, "": ErrInvalid, "AAAAAAAA-0000-4000-8000-000000000001": nil} {
		got, err := rt.ResolveUUID(prefix)
		if !errors.Is(err, want) || (want == nil && got != a) {
			t.Errorf("ResolveUUID(%q) = %q, %v; want %v", prefix, got, err, want)
		}
	}
}

func TestGCExpiresPreparedAndAborted(t *testing.T) {
	rt := newTestRuntime(t)
	ctx := context.Background()
	uuid, err := rt.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	// an aborted prepare: a pod dir left unlocked in prepare/
	aborted := rt.podAt(dirPrepare, "bbbbbbbb-0000-4000-8000-000000000001")
	os.MkdirAll(aborted.dir, 0o711)
	// a pod being prepared right now (locked) must be left alone
	busy := rt.podAt(dirPrepare, "cccccccc-0000-4000-8000-000000000001")
	os.MkdirAll(busy.dir, 0o711)
	l, err := lock.TryExclusive(busy.dir, lock.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if st, _ := rt.Status(ctx, busy.uuid); st == nil || st.State != PodEmbryo {
		t.Errorf("locked pod without manifest: %+v", st)
	}
	if st, _ := rt.Status(ctx, aborted.uuid); st == nil || st.State != PodAbortedPrepare {
		t.Errorf("unlocked pod without manifest: %+v", st)
	}
	// a directory whose creation was interrupted before its rename (a
	// while ago: a fresh one may be about to be locked by its creator)
	stale := filepath.Join(rt.stateDir(dirPrepare), newPodPrefix+"dddddddd-0000-4000-8000-000000000001")
	os.MkdirAll(stale, 0o711)
	os.Chtimes(stale, time.Now().Add(-time.Minute), time.Now().Add(-time.Minute))
	res, err := rt.GC(ctx, GCOptions{ExpirePrepared: time.Hour})
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(err, res.Errors)
	}
	if len(res.Removed) != 1 || res.Removed[0] != aborted.uuid {
		t.Errorf("first gc removed %v, want only the aborted prepare", res.Removed)
	}
	old := time.Now().Add(-2 * time.Hour)
	p, _ := rt.findPod(uuid)
	os.Chtimes(p.dir, old, old)
	res, _ = rt.GC(ctx, GCOptions{ExpirePrepared: time.Hour})
	if len(res.Removed) != 1 || res.Removed[0] != uuid {
		t.Errorf("second gc removed %v, want the expired prepared pod", res.Removed)
	}
	if _, err := os.Stat(busy.dir); err != nil {
		t.Errorf("gc touched a locked pod: %v", err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("gc kept an interrupted pod creation")
	}
}

func TestConcurrentPrepares(t *testing.T) {
	rt := newTestRuntime(t)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := rt.Prepare(context.Background(), PrepareOptions{Apps: []AppOptions{{Image: "x"}}})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	pods, err := rt.List(context.Background())
	if err != nil || len(pods) != 20 {
		t.Errorf("listed %d pods, %v", len(pods), err)
	}
	for _, p := range pods {
		if _, err := os.Stat(schema.PodDir(p.Dir).App("x").Record()); err != nil {
			t.Error(err)
		}
	}
}

// TestAddAppRemovesDebris: an app directory that is not in the manifest
// (an interrupted add) does not block adding the app again.
func TestAddAppRemovesDebris(t *testing.T) {
	rt := newTestRuntime(t)
	p, l, _, err := rt.createPod(PodOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.MkdirAll(filepath.Join(p.appDir("web").Upper(), "junk"), 0o755)
	if _, name, err := rt.addAppRecord(context.Background(), p, AppOptions{Name: "web", Image: "x"}); err != nil || name != "web" {
		t.Fatalf("add over debris: %q %v", name, err)
	}
	if _, err := os.Stat(filepath.Join(p.appDir("web").Upper(), "junk")); err == nil {
		t.Error("debris kept")
	}
	if _, _, err := rt.addAppRecord(context.Background(), p, AppOptions{Name: "web", Image: "x"}); !errors.Is(err, ErrAppExists) {
		t.Errorf("second add: %v, want ErrAppExists", err)
	}
}

// TestRemoveWaitsForReaders: a reader's short shared lock (List, Status)
// does not make Remove fail.
func TestRemoveWaitsForReaders(t *testing.T) {
	rt := newTestRuntime(t)
	ctx := context.Background()
	uuid, err := rt.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := rt.findPod(uuid)
	reader, err := lock.TryShared(p.dir, lock.Dir)
	if err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(100 * time.Millisecond); reader.Close() }()
	if err := rt.Remove(ctx, uuid, false); err != nil {
		t.Fatalf("remove while a reader holds the lock briefly: %v", err)
	}
}
