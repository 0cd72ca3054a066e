package stage0

import (
	"context"
	"testing"
)

// TestPrepareSyncsStateDirs: a prepared pod must outlive a power cut (its
// stage0.json files are synced for a start after a reboot), so its moves
// between state directories must be durable: both state directories are
// synced after the rename. Otherwise the pod can come back in prepare/,
// unlocked, where GC (and the service's repair) delete it as an aborted
// prepare.
func TestPrepareSyncsStateDirs(t *testing.T) {
	rt := newTestRuntime(t)
	var synced []string
	defer func(f func(string) error) { syncStateDir = f }(syncStateDir)
	syncStateDir = func(dir string) error {
		synced = append(synced, dir)
		return nil
	}
	uuid, err := rt.Prepare(context.Background(), PrepareOptions{Apps: []AppOptions{{Image: "busybox"}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := rt.findPod(uuid)
	if err != nil || p.state != dirPrepared {
		t.Fatalf("pod %s: %+v %v", uuid, p, err)
	}
	for _, want := range []string{rt.stateDir(dirPrepared), rt.stateDir(dirPrepare)} {
		found := false
		for _, d := range synced {
			found = found || d == want
		}
		if !found {
			t.Errorf("%s was not synced after the pod moved (synced: %q)", want, synced)
		}
	}
}
