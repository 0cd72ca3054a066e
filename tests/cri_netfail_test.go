package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// failingPlugin is a CNI plugin whose ADD waits until the pod's supervisor
// is up (its stage1.pid, next to the netns), notes whether it saw it, and
// fails; DEL succeeds.
const failingPlugin = `#!/bin/sh
case "$CNI_COMMAND" in
ADD)
	pod=$(dirname "$CNI_NETNS")
	seen=no
	for i in $(seq 100); do
		if [ -s "$pod/stage1.pid" ]; then seen=yes; break; fi
		sleep 0.05
	done
	echo "$seen" >> "$(dirname "$0")/seen"
	echo '{"cniVersion":"1.0.0","code":11,"msg":"rkt test: ADD fails"}'
	exit 1;;
VERSION)
	echo '{"cniVersion":"1.0.0","supportedVersions":["0.4.0","1.0.0"]}';;
esac
exit 0
`

// TestCRIRunPodSandboxFailedADD: the CNI ADD runs while the sandbox's
// supervisor starts; when the ADD fails after the supervisor is up,
// RunPodSandbox fails and leaves nothing behind (supervisor, netns,
// mounts, cgroups: the environment's leak check), and no sandbox is listed.
func TestCRIRunPodSandboxFailedADD(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	bin := filepath.Join(env.Root, "cni-bin")
	conf := filepath.Join(env.Root, "net-fail.d")
	for _, d := range []string{bin, conf} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "rkt-test-fail"), []byte(failingPlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	list := `{"cniVersion":"1.0.0","name":"rkt-test-fail","plugins":[{"type":"rkt-test-fail"}]}`
	if err := os.WriteFile(filepath.Join(conf, "10-fail.conflist"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	svc := startCRIService(t, env, "--cni-conf-dir="+conf, "--cni-bin-dir="+bin)
	c := dialCRI(t, svc)
	ctx := rpcCtx(t)
	for i := 0; i < 2; i++ {
		_, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: podConfig("netfail", t.TempDir())})
		if err == nil || !strings.Contains(err.Error(), "ADD fails") {
			t.Fatalf("RunPodSandbox with a failing CNI ADD: %v, want the plugin's error", err)
		}
	}
	seen, err := os.ReadFile(filepath.Join(bin, "seen"))
	if err != nil || string(seen) != "yes\nyes\n" {
		t.Errorf("the supervisor was not up during the ADDs: %q (%v)", seen, err)
	}
	l, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 0 {
		t.Errorf("sandboxes listed after failed RunPodSandbox: %v", l.Items)
	}
}
