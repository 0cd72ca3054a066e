package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/tests/testutil"
)

// TestCRINameOfUnreadableSandbox: a sandbox whose pod manifest becomes
// unreadable while the service runs (here a newer rkt's format) leaves
// ListPodSandbox, and the kubelet's new sandbox of that name (attempt 0
// again) is run, as a restarted service would run it: its name was kept
// reserved, AlreadyExists until a restart.
func TestCRINameOfUnreadableSandbox(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	ctx := rpcCtx(t)
	pc := podConfig("unreadable", podLogDirOf(t, svc))
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	old := rp.PodSandboxId

	manifest := schema.PodDir(filepath.Join(env.DataDir, "pods", "run", old)).Manifest()
	b, err := os.ReadFile(manifest)
	must(t, "read the manifest", err)
	newer := strings.Replace(string(b), `"version": "`+schema.Version+`"`, `"version": "rkt/v99"`, 1)
	if newer == string(b) {
		t.Fatalf("no version in the manifest: %s", b)
	}
	must(t, "write a newer manifest", os.WriteFile(manifest, []byte(newer), 0o600))
	// readable again at the end, to be stopped and removed
	t.Cleanup(func() {
		if err := os.WriteFile(manifest, b, 0o600); err != nil {
			t.Error(err)
		}
		if _, err := c.RemovePodSandbox(rpcCtx(t), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: old}); err != nil {
			t.Errorf("RemovePodSandbox of the restored sandbox: %v", err)
		}
	})

	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		l, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		must(t, "ListPodSandbox", err)
		if len(l.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unreadable sandbox is still listed: %v", l.Items)
		}
	}
	rp2, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	if err != nil {
		t.Fatalf("RunPodSandbox of the name of a sandbox the kubelet cannot see: %v", err)
	}
	_, err = c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: rp2.PodSandboxId})
	must(t, "RemovePodSandbox", err)
}
