package tests

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// EnvUpgradeFrom lists, separated by colons, directories each holding the
// rkt and stage1 binaries of an earlier version (`make upgrade-from` builds
// them; `make check` sets it).
const EnvUpgradeFrom = "RKT_UPGRADE_FROM"

// TestUpgradeWithRunningPods: a node upgraded while pods run, from each
// earlier version. That version's service and CLI run pods; this
// version's service takes over the same data dir and lists them exactly
// as before, execs in their containers (after an old supervisor went lean
// while idle, where that version does), adds and starts a container in an
// old pod (an old supervisor, driven by this stage0), stops and removes
// them; this version's CLI lists, enters, stops and removes the old CLI
// pod. Then the earlier version takes over again (a rollback) with a pod of
// this version, lists everything as this one did, execs in it and removes
// every pod. Nothing is left behind.
func TestUpgradeWithRunningPods(t *testing.T) {
	requireRoot(t)
	var dirs []string
	for _, d := range strings.Split(os.Getenv(EnvUpgradeFrom), ":") {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		t.Skipf("$%s is empty (make upgrade-from)", EnvUpgradeFrom)
	}
	for _, d := range dirs {
		t.Run(filepath.Base(filepath.Dir(d)), func(t *testing.T) { testUpgradeFrom(t, d) })
	}
}

func testUpgradeFrom(t *testing.T, from string) {
	oldRkt, oldStage1 := filepath.Join(from, "rkt"), filepath.Join(from, "stage1")
	for _, b := range []string{oldRkt, oldStage1} {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("the earlier version: %v", err)
		}
	}
	pe := newPodEnv(t)
	svc := startCRIServiceOf(t, pe.Env, oldRkt, oldStage1)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	logDir := podLogDirOf(t, svc)
	pod0, ctr0 := runPodWithContainer(t, c, "upgrade-0", imgID, logDir)
	runPodWithContainer(t, c, "upgrade-1", imgID, logDir)
	exited := runExit7(t, c, pod0, podConfig("upgrade-0", logDir), imgID)

	oldCLI, oldEnv := *pe, *pe.Env
	oldEnv.Bin = oldRkt
	oldCLI.Env = &oldEnv
	cliPod := oldCLI.runDetached(pe.image, "--exec=/bin/sleep", "--", "600")
	t.Cleanup(func() { pe.Run("stop", "--force", cliPod) })
	pe.waitState(cliPod, "running", 20*time.Second)

	before := criSnapshot(t, c)
	c = sameAfter(t, svc, "the upgrade", before, func() {
		svc.stop()
		svc.rktBin, svc.stage1Bin = "", ""
		svc.Restart()
	})

	// an idle old supervisor re-executes itself lean, and back, from its
	// own binary (versions before the lean supervisor do not)
	lean := false
	for deadline := time.Now().Add(20 * time.Second); !lean && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		b, _ := os.ReadFile("/proc/" + before.pids[pod0] + "/cmdline")
		lean = strings.Contains(string(b), "lean")
	}
	t.Logf("the old pod's supervisor went lean while idle: %v", lean)
	ctx := rpcCtx(t)
	r, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ctr0, Cmd: []string{"echo", "upgraded"}, Timeout: 10})
	must(t, "ExecSync in an old pod", err)
	if strings.TrimSpace(string(r.Stdout)) != "upgraded" || r.ExitCode != 0 {
		t.Errorf("ExecSync in an old pod: exit %d, stdout %q, stderr %q", r.ExitCode, r.Stdout, r.Stderr)
	}
	added, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod0,
		Config: containerConfig("added", imgID, "sleep", "600"), SandboxConfig: podConfig("upgrade-0", logDir)})
	must(t, "CreateContainer in an old pod", err)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: added.ContainerId})
	must(t, "StartContainer in an old pod", err)
	waitContainerState(t, c, added.ContainerId, runtimeapi.ContainerState_CONTAINER_RUNNING)
	_, err = c.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: ctr0})
	must(t, "ContainerStats in an old pod", err)
	_, err = c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: added.ContainerId, Timeout: 1})
	must(t, "StopContainer in an old pod", err)
	st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: exited})
	must(t, "ContainerStatus", err)
	if st.Status.ExitCode != 7 {
		t.Errorf("an old pod's exited container after the upgrade: exit %d, want 7", st.Status.ExitCode)
	}

	if list := pe.RunOK("list", "--no-legend"); !strings.Contains(list.Stdout, cliPod[:8]) {
		t.Errorf("rkt list after the upgrade does not show the old CLI pod %s:\n%s", cliPod, list.Stdout)
	}
	if got := pe.RunOK("enter", cliPod, "--", "echo", "entered"); strings.TrimSpace(got.Stdout) != "entered" {
		t.Errorf("rkt enter in the old CLI pod: %q", got.Stdout)
	}
	pe.RunOK("stop", "--force", cliPod)
	pe.waitState(cliPod, "exited", 20*time.Second)
	pe.RunOK("rm", cliPod)

	// and back: the earlier version takes over again (a rollback), with a
	// pod this version started
	newPod, newCtr := runPodWithContainer(t, c, "upgrade-new", imgID, logDir)
	c = sameAfter(t, svc, "the rollback", criSnapshot(t, c), func() {
		svc.stop()
		svc.rktBin, svc.stage1Bin = oldRkt, oldStage1
		svc.Restart()
	})
	ctx = rpcCtx(t)
	r, err = c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: newCtr, Cmd: []string{"echo", "rolled back"}, Timeout: 10})
	must(t, "ExecSync of the earlier version in a new pod", err)
	if strings.TrimSpace(string(r.Stdout)) != "rolled back" || r.ExitCode != 0 {
		t.Errorf("ExecSync of the earlier version in a new pod: exit %d, stdout %q, stderr %q", r.ExitCode, r.Stdout, r.Stderr)
	}

	for _, id := range append(slices.Collect(maps.Keys(before.pids)), newPod) {
		_, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
		must(t, "StopPodSandbox "+id, err)
		_, err = c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
		must(t, "RemovePodSandbox "+id, err)
	}
}
