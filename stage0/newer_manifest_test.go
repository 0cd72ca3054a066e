package stage0

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rkt/rkt/pkg/schema"
)

// TestRunPreparedNewerManifest: a prepared pod whose manifest a newer rkt
// wrote (a node rolled back between prepare and run-prepared) is refused
// and left as it was, prepared, for the newer rkt to run: not moved to
// run/ and marked exited, where nothing can run it any more.
func TestRunPreparedNewerManifest(t *testing.T) {
	rt := newTestRuntime(t)
	ctx := context.Background()
	uuid, err := rt.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: "busybox"}}})
	if err != nil {
		t.Fatal(err)
	}
	manifest := makeNewer(t, rt, uuid)
	if err := rt.RunPrepared(ctx, uuid); !errors.Is(err, schema.ErrNewerVersion) {
		t.Errorf("run-prepared of a newer pod: %v, want ErrNewerVersion", err)
	}
	if _, err := os.Stat(manifest); err != nil {
		t.Errorf("the newer pod is no longer prepared: %v", err)
	}
	if e, _ := os.ReadDir(rt.stateDir(dirRun)); len(e) != 0 {
		t.Errorf("the newer pod was moved to run/: %v", e)
	}
}

// makeNewer rewrites the manifest of the prepared pod uuid as a newer rkt
// would write it, and returns its path.
func makeNewer(t *testing.T, rt *Runtime, uuid string) string {
	t.Helper()
	manifest := schema.PodDir(filepath.Join(rt.stateDir(dirPrepared), uuid)).Manifest()
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	newer := strings.Replace(string(b), `"version": "`+schema.Version+`"`, `"version": "rkt/v99"`, 1)
	if newer == string(b) {
		t.Fatalf("no version in the manifest: %s", b)
	}
	if err := os.WriteFile(manifest, []byte(newer), 0o600); err != nil {
		t.Fatal(err)
	}
	return manifest
}

// TestListLeavesOutUnreadable: a pod whose status cannot be read (here a
// newer rkt's manifest) is left out of lists, with and without the view,
// not made to fail them: it would hide every other pod (and fail the
// kubelet's relist).
func TestListLeavesOutUnreadable(t *testing.T) {
	for _, watch := range []bool{false, true} {
		rt, err := New(Config{DataDir: t.TempDir(), Images: fakeImages{}, Stage1Path: "/nonexistent/stage1", Watch: watch})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		var uuids []string
		for _, img := range []string{"kept", "busybox"} {
			uuid, err := rt.Prepare(ctx, PrepareOptions{Apps: []AppOptions{{Image: img}}})
			if err != nil {
				t.Fatal(err)
			}
			uuids = append(uuids, uuid)
		}
		makeNewer(t, rt, uuids[0])
		readableOnly := func() bool {
			pods, err := rt.List(ctx)
			return err == nil && len(pods) == 1 && pods[0].UUID == uuids[1]
		}
		if watch {
			// the rewrite is another process's change: the view sees
			// it when its loop has read the event
			waitView(t, "the rewritten manifest", readableOnly)
		} else if !readableOnly() {
			t.Errorf("List of %d pods, one unreadable: want the readable pod only", len(uuids))
		}
		if left := rt.LeftOut(); len(left) != 1 || !errors.Is(left[uuids[0]], schema.ErrNewerVersion) {
			t.Errorf("watch %v: LeftOut = %v, want the newer pod", watch, left)
		}
		// its image stays in use: the pod is kept for the newer rkt
		if inUse, err := rt.ImagesInUse(); err != nil || !inUse["sha256:kept"] {
			t.Errorf("watch %v: ImagesInUse = %v, %v; want the left-out pod's image", watch, inUse, err)
		}
		rt.Close()
	}
}
