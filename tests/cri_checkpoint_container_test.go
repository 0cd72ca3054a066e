package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

// TestCRICheckpointContainer: `crictl checkpoint --export` of one of two
// counting containers writes a private tar archive holding a checkpoint of
// that container only, in the layout checkpointctl reads (which shows it),
// leaves both running and nothing behind in the pod; bad requests get
// their codes; the archive, extracted, is restored by RestorePod into a new
// sandbox, where the counter goes on from the cut.
func TestCRICheckpointContainer(t *testing.T) {
	env, svc, c, imgID := checkpointService(t, toolPath(t, "criu"))
	ctx := rpcCtx(t)
	logDir := podLogDir(t, c)
	pc := podConfig("ckpt-ctr", logDir)
	podID, started := runCounters(t, c, imgID, pc, nil, "one", "two")
	ids := map[string]string{"one": started[0], "two": started[1]}
	created, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podID,
		Config: containerConfig("idle", imgID, "true"), SandboxConfig: pc})
	must(t, "CreateContainer idle", err)
	count := func(dir, name string) int { return counterLogCount(dir, name, true) }
	waitCount := func(dir, name string, over int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); count(dir, name) <= over; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("container %s does not count past %d", name, over)
			}
		}
	}
	waitCount(logDir, "one", 5)
	waitCount(logDir, "two", 5)

	out := t.TempDir()
	archive := filepath.Join(out, "one.tar")
	cut := count(logDir, "one")
	t0 := time.Now()
	newCrictl(t, svc).ok("checkpoint", "--export="+archive, ids["one"])
	t.Logf("crictl checkpoint of one container: %v", time.Since(t0))
	for _, name := range []string{"one", "two"} {
		waitCount(logDir, name, count(logDir, name)+3)
	}
	fi, err := os.Stat(archive)
	must(t, "stat the archive", err)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the archive has mode %v, want 0600", fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(out); len(ents) != 1 {
		t.Errorf("the checkpoint left files beside its archive: %v", ents)
	}
	podCkpts := filepath.Join(env.DataDir, "pods", "run", podID, "checkpoints")
	if ents, err := os.ReadDir(podCkpts); err != nil || len(ents) != 0 {
		t.Errorf("the pod's checkpoints directory: %v, %v; want it empty", ents, err)
	}
	var cm stage0.CheckpointManifest
	must(t, "decode the archive's manifest", json.Unmarshal([]byte(tarFile(t, archive, stage0.CheckpointManifestFile)), &cm))
	if cm.Version != stage0.ContainerCheckpointVersion || len(cm.Apps) != 1 || len(cm.Pod.Apps) != 1 {
		t.Fatalf("the archive's checkpoint: version %d, apps %v; want a container checkpoint of one only", cm.Version, cm.Apps)
	}
	if tarFile(t, archive, "checkpoint/inventory.img") == "" || tarFile(t, archive, "rootfs-diff.tar") == "" {
		t.Errorf("the archive lacks the CRIU images or the rootfs layer")
	}
	var spec struct{ Annotations map[string]string }
	must(t, "decode spec.dump", json.Unmarshal([]byte(tarFile(t, archive, "spec.dump")), &spec))
	if a := spec.Annotations; a["io.kubernetes.cri.container-name"] != "one" || a["io.kubernetes.cri.sandbox-name"] != pc.Metadata.Name ||
		a["io.kubernetes.cri.sandbox-namespace"] != pc.Metadata.Namespace {
		t.Errorf("spec.dump's annotations: %v", a)
	}
	// checkpointctl, which reads CRI-O's and containerd's archives, reads
	// this one: the container, its image, the runtime, the process tree.
	ckctl := toolPath(t, "checkpointctl")
	shown, err := exec.Command(ckctl, "show", archive).CombinedOutput()
	t.Logf("checkpointctl show:\n%s", shown)
	if err != nil || !strings.Contains(string(shown), "one") || !strings.Contains(string(shown), "rkt") || !strings.Contains(string(shown), ids["one"][:12]) {
		t.Errorf("checkpointctl show %s: %v", archive, err)
	}
	tree, err := exec.Command(ckctl, "inspect", "--ps-tree", archive).CombinedOutput()
	t.Logf("checkpointctl inspect --ps-tree:\n%s", tree)
	if _, procs, ok := strings.Cut(string(tree), "Process tree"); err != nil || !ok || !strings.Contains(procs, " sh") {
		t.Errorf("checkpointctl inspect --ps-tree %s: %v, want the counter's shell in the process tree", archive, err)
	}

	// Bad requests: their codes, and no file written.
	bad := []struct {
		what string
		req  *runtimeapi.CheckpointContainerRequest
		code codes.Code
	}{
		{"an existing archive", &runtimeapi.CheckpointContainerRequest{ContainerId: ids["two"], Location: archive}, codes.AlreadyExists},
		{"a relative location", &runtimeapi.CheckpointContainerRequest{ContainerId: ids["two"], Location: "two.tar"}, codes.InvalidArgument},
		{"a missing directory", &runtimeapi.CheckpointContainerRequest{ContainerId: ids["two"], Location: out + "/missing/two.tar"}, codes.InvalidArgument},
		{"no location", &runtimeapi.CheckpointContainerRequest{ContainerId: ids["two"]}, codes.InvalidArgument},
		{"a created container", &runtimeapi.CheckpointContainerRequest{ContainerId: created.ContainerId, Location: out + "/idle.tar"}, codes.FailedPrecondition},
		{"an unknown container", &runtimeapi.CheckpointContainerRequest{ContainerId: "0123456789abcdef", Location: out + "/x.tar"}, codes.NotFound},
	}
	for _, tc := range bad {
		_, err := c.CheckpointContainer(ctx, tc.req)
		if status.Code(err) != tc.code {
			t.Errorf("CheckpointContainer with %s: %v, want %v", tc.what, err, tc.code)
		}
	}
	if ents, _ := os.ReadDir(out); len(ents) != 1 {
		t.Errorf("refused checkpoints wrote files: %v", ents)
	}

	// The archive, extracted, is a checkpoint RestorePod restores.
	dir := filepath.Join(t.TempDir(), "ckpt")
	must(t, "mkdir", os.Mkdir(dir, 0o700))
	if b, err := exec.Command("tar", "-xf", archive, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar -x the archive: %v: %s", err, b)
	}
	logDir2 := podLogDir(t, c)
	floor := count(logDir, "one")
	rr, err := c.RestorePod(ctx, &runtimeapi.RestorePodRequest{CheckpointPath: dir, Config: podConfig("ckpt-ctr-restored", logDir2),
		ContainerConfigs: []*runtimeapi.ContainerConfig{containerConfig("one", imgID, "sh", "-c", counterScript)}})
	must(t, "RestorePod of the extracted archive", err)
	if len(rr.RestoredContainers) != 1 {
		t.Fatalf("RestorePod answered %v", rr)
	}
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: rr.RestoredContainers[0].ContainerId})
	must(t, "StartContainer of the restored container", err)
	waitCount(logDir2, "one", 0)
	b, _ := os.ReadFile(filepath.Join(logDir2, "one.log"))
	first := 0
	if f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0]); len(f) >= 5 {
		first, _ = strconv.Atoi(f[4])
	}
	if first <= cut || first > floor+1 {
		t.Errorf("the restored counter starts at j=%d; the checkpoint cut it between %d and %d", first, cut, floor)
	}
	stopRestored(t, c, rr)
}

// TestCRICheckpointDeadline: a checkpoint whose deadline passes while criu
// works (a criu that starts 3 s late) fails with DeadlineExceeded, dumps
// no app after the deadline, resumes the containers, and leaves no file:
// CheckpointPod by the client's deadline, CheckpointContainer by its
// timeout field; a criu that never answers is killed, in a dump or in the
// restore of a StartContainer.
func TestCRICheckpointDeadline(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	slow := filepath.Join(dir, "slow")
	hang := filepath.Join(dir, "hang")
	hungPID := filepath.Join(dir, "hung.pid")
	criu := filepath.Join(dir, "criu")
	script := "#!/bin/sh\n[ \"$1\" = swrk ] && [ -f " + slow + " ] && sleep 3\n" +
		"[ \"$1\" = swrk ] && [ -f " + hang + " ] && echo $$ >" + hungPID + " && exec sleep 600\n" +
		"exec " + toolPath(t, "criu") + " \"$@\"\n"
	must(t, "write the criu wrapper", os.WriteFile(criu, []byte(script), 0o700))
	env, svc, c, imgID := checkpointService(t, criu)
	ctx := rpcCtx(t)
	logDir := podLogDir(t, c)
	podID, ids := runCounters(t, c, imgID, podConfig("ckpt-late", logDir), nil, "one", "two")
	lines := func(name string) int {
		b, _ := os.ReadFile(filepath.Join(logDir, name+".log"))
		return strings.Count(string(b), "\n")
	}
	counting := func() {
		t.Helper()
		for _, name := range []string{"one", "two"} {
			n := lines(name)
			waitUntil(t, 30*time.Second, name+" to count on", func() bool { return lines(name) > n+3 })
		}
	}
	counting()
	must(t, "slow criu down", os.WriteFile(slow, nil, 0o600))

	// CheckpointPod: the client's deadline passes during the first dump.
	out := t.TempDir()
	dctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	_, err := c.CheckpointPod(dctx, &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: out, ContainerIds: ids})
	cancel()
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("CheckpointPod past its deadline: %v, want DeadlineExceeded", err)
	}
	empty := func() bool { ents, _ := os.ReadDir(out); return len(ents) == 0 }
	// The service finishes the dump under way, then removes what it wrote
	// (the on-time CheckpointPod below, into the same directory, waits for
	// the apps and needs it empty).
	waitUntil(t, 30*time.Second, "the service to remove the late checkpoint", empty)
	counting()

	// CheckpointContainer: its timeout passes during the dump; the
	// service answers.
	archive := filepath.Join(t.TempDir(), "one.tar")
	t0 := time.Now()
	_, err = c.CheckpointContainer(ctx, &runtimeapi.CheckpointContainerRequest{ContainerId: ids[0], Location: archive, Timeout: 1})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("CheckpointContainer past its timeout: %v, want DeadlineExceeded", err)
	}
	t.Logf("CheckpointContainer with a 1 s timeout and a criu 3 s late answered after %v: %v", time.Since(t0), err)
	if _, err := os.Lstat(archive); err == nil {
		t.Errorf("a late CheckpointContainer left its archive")
	}
	if ents, _ := os.ReadDir(filepath.Dir(archive)); len(ents) != 0 {
		t.Errorf("a late CheckpointContainer left %v", ents)
	}
	podCkpts := filepath.Join(env.DataDir, "pods", "run", podID, "checkpoints")
	if ents, _ := os.ReadDir(podCkpts); len(ents) != 0 {
		t.Errorf("a late CheckpointContainer left %v in the pod", ents)
	}
	counting()
	waitUntil(t, 30*time.Second, "the last criu to end", empty) // nothing written after the answer

	// A criu that never answers (as 4.1.1's dumps on Linux 6.18): the
	// supervisor kills it 10 s past the deadline, resumes the apps and
	// frees its spawner (exec works), and nothing is left.
	must(t, "speed criu up", os.Remove(slow))
	must(t, "hang criu", os.WriteFile(hang, nil, 0o600))
	t.Cleanup(func() {
		if b, err := os.ReadFile(hungPID); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL) // the wrapper this test started, should the supervisor not have
			}
		}
	})
	t0 = time.Now()
	dctx, cancel = context.WithTimeout(ctx, 1500*time.Millisecond)
	_, err = c.CheckpointPod(dctx, &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: out, ContainerIds: ids})
	cancel()
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("CheckpointPod with a hung criu: %v, want DeadlineExceeded", err)
	}
	hungKilled := func() bool {
		b, err := os.ReadFile(hungPID)
		if err != nil {
			return false
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0 && syscall.Kill(pid, 0) != nil
	}
	waitUntil(t, 40*time.Second, "the hung criu to be killed", hungKilled)
	t.Logf("the hung criu was killed %v after the call began", time.Since(t0))
	counting()
	waitUntil(t, 30*time.Second, "the service to remove the killed dump's files", empty)
	er, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ids[1], Cmd: []string{"true"}, Timeout: 10})
	if err != nil || er.ExitCode != 0 {
		t.Errorf("ExecSync after the killed dump: %v %v", er, err)
	}
	must(t, "unhang criu", os.Remove(hang))
	t.Logf("the pod was back %v after the call began", time.Since(t0))

	// On time, the same checkpoints work.
	_, err = c.CheckpointContainer(ctx, &runtimeapi.CheckpointContainerRequest{ContainerId: ids[0], Location: archive, Timeout: 60})
	must(t, "CheckpointContainer on time", err)
	_, err = c.CheckpointPod(ctx, &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: out, ContainerIds: ids})
	must(t, "CheckpointPod on time", err)
	counting()

	// A restore whose criu never answers: killed 10 s past the
	// StartContainer's deadline; the container exits with the reason,
	// nothing of it runs, and the pod restores again once criu works.
	rpc := podConfig("restore-late", podLogDir(t, c))
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: rpc})
	must(t, "RunPodSandbox", err)
	restored := func(name string) string {
		t.Helper()
		cfg := containerConfig(name, archive)
		cc, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, Config: cfg, SandboxConfig: rpc})
		must(t, "CreateContainer "+name+" from the checkpoint", err)
		return cc.ContainerId
	}
	late := restored("late")
	os.Remove(hungPID)
	must(t, "hang criu", os.WriteFile(hang, nil, 0o600))
	t0 = time.Now()
	sctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	_, err = c.StartContainer(sctx, &runtimeapi.StartContainerRequest{ContainerId: late})
	cancel()
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("StartContainer restoring with a hung criu: %v, want DeadlineExceeded", err)
	}
	waitUntil(t, 40*time.Second, "the hung restore's criu to be killed", hungKilled)
	t.Logf("the hung restore's criu was killed %v after the call began", time.Since(t0))
	var st *runtimeapi.ContainerStatus
	waitUntil(t, 30*time.Second, "the late restore to end", func() bool {
		r, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: late})
		st = r.GetStatus()
		return err == nil && st.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED
	})
	if st.ExitCode == 0 || !strings.Contains(st.Message, "killed") {
		t.Errorf("the killed restore's container: exit code %d, message %q; want a failure, killed", st.ExitCode, st.Message)
	}
	appCgroups := func(name string) []string {
		cgs, _ := filepath.Glob("/sys/fs/cgroup/*" + svc.cgroupParent() + "/*/" + name + "-*")
		return cgs
	}
	if left := appCgroups("late"); len(left) > 0 {
		t.Errorf("the killed restore left cgroups %v", left)
	}
	must(t, "unhang criu", os.Remove(hang))
	ontime := restored("ontime")
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ontime})
	must(t, "StartContainer restoring after the killed restore", err)
	r, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ontime})
	must(t, "ContainerStatus", err)
	if r.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("the restore after the killed one: %v, want RUNNING", r.Status.State)
	}
	if len(appCgroups("ontime")) == 0 {
		t.Errorf("no cgroup found for the running restored container: the check for the killed one's looks in the wrong place")
	}
}
