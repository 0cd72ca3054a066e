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
	manifest := schema.PodDir(filepath.Join(rt.stateDir(dirPrepared), uuid)).Manifest()
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	newer := strings.Replace(string(b), `"version": "`+schema.Version+`"`, `"version": "rkt/v99"`, 1)
	if newer == string(b) {
		t.Fatalf("no version in the manifest: %s", b)
	}
	if err := os.WriteFile(manifest, []byte(newer), 0o644); err != nil {
		t.Fatal(err)
	}
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
