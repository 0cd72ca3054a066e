package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIPodSharesDevShm: the containers of a sandbox share its /dev/shm
// (POSIX shared memory, as they share its IPC namespace), a 64 MiB tmpfs,
// as with containerd and CRI-O; another sandbox has its own; nothing is
// left mounted once the sandboxes are removed (the leak check).
func TestCRIPodSharesDevShm(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	t.Cleanup(func() { removeAllPods(t, c) })
	pod, first := runPodWithContainer(t, c, "shm", imgID, "")
	pc := podConfig("shm", "")
	cc, err := c.CreateContainer(rpcCtx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: pod,
		Config: containerConfig("second", imgID, "sleep", "100000"), SandboxConfig: pc})
	must(t, "CreateContainer", err)
	_, err = c.StartContainer(rpcCtx(t), &runtimeapi.StartContainerRequest{ContainerId: cc.ContainerId})
	must(t, "StartContainer", err)
	_, other := runPodWithContainer(t, c, "shm-other", imgID, "")

	exec := func(ctr string, cmd string) string {
		t.Helper()
		r, err := c.ExecSync(rpcCtx(t), &runtimeapi.ExecSyncRequest{ContainerId: ctr, Cmd: []string{"sh", "-c", cmd}})
		must(t, "ExecSync "+cmd, err)
		if r.ExitCode != 0 {
			t.Fatalf("%s in %s: exit %d: %s", cmd, ctr, r.ExitCode, r.Stderr)
		}
		return strings.TrimSpace(string(r.Stdout))
	}
	exec(first, "echo shared > /dev/shm/seg")
	if got := exec(cc.ContainerId, "cat /dev/shm/seg"); got != "shared" {
		t.Errorf("the second container of the sandbox reads %q in /dev/shm/seg, want the first's", got)
	}
	if got := exec(other, "cat /dev/shm/seg 2>/dev/null || echo none"); got != "none" {
		t.Errorf("a container of another sandbox reads %q in /dev/shm/seg, want none", got)
	}
	if got := exec(first, "grep ' /dev/shm ' /proc/mounts"); !strings.Contains(got, "tmpfs") || !strings.Contains(got, "size=65536k") {
		t.Errorf("/dev/shm is %q, want a 64 MiB tmpfs", got)
	}
	// open to all inside the pod (1777), so root's only on the host: no
	// other user, nor the rkt group, reaches the apps' shared memory
	shmDir := filepath.Join(env.DataDir, "pods", "run", pod, "shm")
	if fi, err := os.Stat(shmDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v, %v; want a directory 0700", shmDir, fi.Mode(), err)
	}
}
