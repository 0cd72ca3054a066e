package tests

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/tests/testutil"
)

// counterScript counts ten times a second in its rootfs (/count, from where
// it was) and in its log: "i j", where j counts in memory only, from 0 at
// every start. A restored process goes on with its j; a new one would not.
// It exits on SIGTERM, also as the pid 1 of its PID namespace. It waits
// with the shell's read on a FIFO, not sleep: it forks nothing once
// counting (TestCRIRestoreSharedPIDForks has one that forks).
const counterScript = `trap 'exit 0' TERM; i=0; j=0; [ -f /count ] && i=$(cat /count); [ -p /tick ] || mkfifo /tick; exec 3<>/tick; while true; do i=$((i+1)); j=$((j+1)); echo $i >/count; echo $i $j; read -t 0.1 x <&3; done`

// TestCRICheckpointPod: CheckpointPod of a pod with two counting
// containers writes a checkpoint (CRIU images, rootfs layer, manifest) with
// private modes inside output_path only, and leaves both containers
// running; RestorePod and StartContainer bring them back in a new sandbox
// counting on from the cut; bad requests get their codes and leave nothing.
func TestCRICheckpointPod(t *testing.T) {
	_, _, c, imgID := checkpointService(t, toolPath(t, "criu"))
	ctx := rpcCtx(t)
	logDir := podLogDir(t, c)
	pc := podConfig("ckpt", logDir)
	podID, ids := runCounters(t, c, imgID, pc, nil, "one", "two")
	stopped, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podID,
		Config: containerConfig("idle", imgID, "true"), SandboxConfig: pc})
	must(t, "CreateContainer idle", err)
	lastCount := func(name string) int {
		b, _ := os.ReadFile(filepath.Join(logDir, name+".log"))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		f := strings.Fields(lines[len(lines)-1])
		if len(f) < 4 {
			return 0
		}
		n, _ := strconv.Atoi(f[3])
		return n
	}
	waitCount := func(name string, over int) int {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if n := lastCount(name); n > over {
				return n
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("container %s does not count past %d (log: %d)", name, over, lastCount(name))
		return 0
	}
	waitCount("one", 5)
	waitCount("two", 5)

	cut := map[string]int{"one": lastCount("one"), "two": lastCount("two")} // the dump is later
	out := filepath.Join(t.TempDir(), "ckpt")
	must(t, "mkdir", os.Mkdir(out, 0o700))
	t0 := time.Now()
	_, err = c.CheckpointPod(ctx, &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: out, ContainerIds: ids})
	must(t, "CheckpointPod", err)
	t.Logf("CheckpointPod of 2 containers: %v", time.Since(t0))
	// Both run on: their counters move past the checkpoint.
	for _, name := range []string{"one", "two"} {
		waitCount(name, lastCount(name)+3)
	}
	for _, id := range ids {
		st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		must(t, "ContainerStatus", err)
		if st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("container %s is %v after the checkpoint", id, st.Status.State)
		}
	}
	// The layout, its modes, and nothing outside out.
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 1 {
		t.Errorf("the checkpoint wrote beside its directory: %v", ents)
	}
	err = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir() && fi.Mode().Perm() != 0o700:
			t.Errorf("directory %s has mode %v, want 0700", p, fi.Mode().Perm())
		case fi.Mode().IsRegular() && fi.Mode().Perm() != 0o600:
			t.Errorf("file %s has mode %v, want 0600", p, fi.Mode().Perm())
		case !fi.IsDir() && !fi.Mode().IsRegular():
			t.Errorf("%s is neither a file nor a directory: %v", p, fi.Mode())
		}
		return nil
	})
	must(t, "walk the checkpoint", err)
	b, err := os.ReadFile(filepath.Join(out, stage0.CheckpointManifestFile))
	must(t, "read the checkpoint manifest", err)
	var cm stage0.CheckpointManifest
	must(t, "decode the checkpoint manifest", json.Unmarshal(b, &cm))
	var names []string
	for _, a := range cm.Apps {
		names = append(names, a.Name)
	}
	slices.Sort(names)
	if cm.Version != stage0.PodCheckpointVersion || cm.Pod.UUID != podID || len(cm.Pod.Apps) != 2 || len(names) != 2 {
		t.Errorf("checkpoint manifest: version %d, pod %s, %d pod apps, apps %v", cm.Version, cm.Pod.UUID, len(cm.Pod.Apps), names)
	}
	for _, a := range cm.Apps {
		if len(a.Args) != 3 || a.Args[2] != counterScript {
			t.Errorf("app %s: args %q", a.Name, a.Args)
		}
		if _, err := os.Stat(filepath.Join(out, a.Name, "criu", "inventory.img")); err != nil {
			t.Errorf("app %s has no CRIU images: %v", a.Name, err)
		}
		// (empty when the app was frozen between truncating and writing it)
		if _, ok := tarEntry(t, filepath.Join(out, a.Name, "rootfs.tar"), "count"); !ok {
			t.Errorf("app %s: its rootfs layer lacks /count", a.Name)
		}
	}

	// A dump that fails (criu refuses established TCP connections, which
	// are not asked for) fails the call, leaves the directory empty and
	// the containers running.
	tcp, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podID,
		Config:        containerConfig("tcp", imgID, "sh", "-c", "sleep 100000 | nc -l -p 7777 >/dev/null & sleep 1; while true; do echo x; sleep 1; done | nc 127.0.0.1 7777"),
		SandboxConfig: pc})
	must(t, "CreateContainer tcp", err)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: tcp.ContainerId})
	must(t, "StartContainer tcp", err)
	deadline := time.Now().Add(30 * time.Second)
	for {
		er, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: tcp.ContainerId, Cmd: []string{"netstat", "-tn"}, Timeout: 30})
		if err != nil {
			b, _ := os.ReadFile(filepath.Join(logDir, "tcp.log"))
			t.Fatalf("ExecSync netstat in the tcp container: %v (its log: %s)", err, b)
		}
		if strings.Contains(string(er.Stdout), "ESTABLISHED") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no TCP connection in the tcp container: %s", er.Stdout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	failed := t.TempDir()
	_, err = c.CheckpointPod(ctx, &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: failed,
		ContainerIds: []string{ids[0], tcp.ContainerId, ids[1]}})
	if err == nil {
		t.Fatal("CheckpointPod of a container with an established TCP connection succeeded")
	}
	t.Logf("CheckpointPod with a TCP connection: %v", err)
	if ents, _ := os.ReadDir(failed); len(ents) != 0 {
		t.Errorf("a failed checkpoint left %v", ents)
	}
	for _, name := range []string{"one", "two"} {
		waitCount(name, lastCount(name)+3)
	}
	_, err = c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: tcp.ContainerId, Timeout: 1})
	must(t, "StopContainer tcp", err)

	// Bad requests: their codes, and nothing written.
	full := t.TempDir()
	must(t, "write", os.WriteFile(filepath.Join(full, "keep"), []byte("x"), 0o600))
	empty := t.TempDir()
	bad := []struct {
		what string
		req  *runtimeapi.CheckpointPodRequest
		code codes.Code
	}{
		{"a directory that is not empty", &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: full, ContainerIds: ids}, codes.InvalidArgument},
		{"a relative path", &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: "ckpt", ContainerIds: ids}, codes.InvalidArgument},
		{"a missing directory", &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: empty + "/missing", ContainerIds: ids}, codes.InvalidArgument},
		{"an option", &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: empty, ContainerIds: ids, Options: map[string]string{"leave-running": "false"}}, codes.InvalidArgument},
		{"no containers", &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: empty}, codes.InvalidArgument},
		{"a container twice", &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: empty, ContainerIds: []string{ids[0], ids[0]}}, codes.InvalidArgument},
		{"a created container", &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: empty, ContainerIds: []string{ids[0], stopped.ContainerId}}, codes.FailedPrecondition},
		{"an unknown sandbox", &runtimeapi.CheckpointPodRequest{PodSandboxId: "0123456789abcdef", OutputPath: empty, ContainerIds: ids}, codes.NotFound},
	}
	for _, tc := range bad {
		_, err := c.CheckpointPod(ctx, tc.req)
		if status.Code(err) != tc.code {
			t.Errorf("CheckpointPod with %s: %v, want %v", tc.what, err, tc.code)
		}
	}
	for _, d := range []string{full, empty} {
		if ents, _ := os.ReadDir(d); len(ents) != map[string]int{full: 1, empty: 0}[d] {
			t.Errorf("a refused checkpoint changed %s: %v", d, ents)
		}
	}

	// RestorePod into a new sandbox: refused requests leave no sandbox; the
	// restored containers are CREATED, then StartContainer resumes their
	// counters where the checkpoint cut them, with /count in their rootfs.
	before := treeState(t, out)
	logDir2 := podLogDir(t, c)
	pc2 := podConfig("restored", logDir2)
	cfgs := func(cmd ...string) []*runtimeapi.ContainerConfig {
		var l []*runtimeapi.ContainerConfig
		for _, name := range []string{"one", "two"} {
			l = append(l, containerConfig(name, imgID, cmd...))
		}
		return l
	}
	good := cfgs("sh", "-c", counterScript)
	sandboxes := func() int {
		l, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		must(t, "ListPodSandbox", err)
		return len(l.Items)
	}
	nSandboxes := sandboxes()
	// another command, with mount sources to create: its first container
	// is created, then refused, and what it made on the host goes with it
	made := filepath.Join(t.TempDir(), "made")
	otherCmd := cfgs("sleep", "1000")
	for _, cfg := range otherCmd {
		cfg.Mounts = []*runtimeapi.Mount{{HostPath: filepath.Join(made, cfg.Metadata.Name), ContainerPath: "/data"}}
	}
	badRestores := []struct {
		what string
		req  *runtimeapi.RestorePodRequest
		code codes.Code
	}{
		{"a relative path", &runtimeapi.RestorePodRequest{CheckpointPath: "ckpt", Config: pc2, ContainerConfigs: good}, codes.InvalidArgument},
		{"no checkpoint", &runtimeapi.RestorePodRequest{CheckpointPath: empty, Config: pc2, ContainerConfigs: good}, codes.InvalidArgument},
		{"an option", &runtimeapi.RestorePodRequest{CheckpointPath: out, Config: pc2, ContainerConfigs: good, Options: map[string]string{"x": "y"}}, codes.InvalidArgument},
		{"an unknown handler", &runtimeapi.RestorePodRequest{CheckpointPath: out, Config: pc2, ContainerConfigs: good, RuntimeHandler: "nosuch"}, codes.InvalidArgument},
		{"a missing container", &runtimeapi.RestorePodRequest{CheckpointPath: out, Config: pc2, ContainerConfigs: good[:1]}, codes.InvalidArgument},
		{"a name twice", &runtimeapi.RestorePodRequest{CheckpointPath: out, Config: pc2, ContainerConfigs: []*runtimeapi.ContainerConfig{good[0], good[0]}}, codes.InvalidArgument},
		{"another command", &runtimeapi.RestorePodRequest{CheckpointPath: out, Config: pc2, ContainerConfigs: otherCmd}, codes.FailedPrecondition},
	}
	for _, tc := range badRestores {
		_, err := c.RestorePod(ctx, tc.req)
		if status.Code(err) != tc.code {
			t.Errorf("RestorePod with %s: %v, want %v", tc.what, err, tc.code)
		}
		if n := sandboxes(); n != nSandboxes {
			t.Fatalf("RestorePod with %s left a sandbox: %d, want %d", tc.what, n, nSandboxes)
		}
	}
	if _, err := os.Lstat(made); err == nil {
		t.Errorf("the refused RestorePod left the mount sources it created (%s)", made)
	}
	floor := map[string]int{"one": lastCount("one"), "two": lastCount("two")}
	t0 = time.Now()
	rr, err := c.RestorePod(ctx, &runtimeapi.RestorePodRequest{CheckpointPath: out, Config: pc2, ContainerConfigs: good})
	must(t, "RestorePod", err)
	t.Logf("RestorePod of 2 containers: %v", time.Since(t0))
	if len(rr.RestoredContainers) != 2 || rr.PodSandboxId == "" || rr.PodSandboxId == podID {
		t.Fatalf("RestorePod answered %v", rr)
	}
	for _, rc := range rr.RestoredContainers {
		st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: rc.ContainerId})
		must(t, "ContainerStatus", err)
		if st.Status.State != runtimeapi.ContainerState_CONTAINER_CREATED || st.Status.Metadata.GetName() != rc.Name {
			t.Errorf("restored container %s (%s) is %v", rc.ContainerId, rc.Name, st.Status.State)
		}
	}
	t0 = time.Now()
	for _, rc := range rr.RestoredContainers {
		_, err := c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: rc.ContainerId})
		if err != nil {
			t.Logf("criu's restore log:\n%s", criuLogOf(err))
		}
		must(t, "StartContainer of restored "+rc.Name, err)
	}
	t.Logf("StartContainer (CRIU restore) of 2 containers: %v", time.Since(t0))
	for _, rc := range rr.RestoredContainers {
		deadline := time.Now().Add(30 * time.Second)
		var first int
		for time.Now().Before(deadline) {
			b, _ := os.ReadFile(filepath.Join(logDir2, rc.Name+".log"))
			if f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0]); len(f) >= 5 {
				first, _ = strconv.Atoi(f[4]) // j
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		// The original (i == j: it started without /count) logged cut
		// before the checkpoint and went on after it: the restored
		// process goes on with the dumped j.
		t.Logf("restored %s goes on at j=%d (the original was at %d before the restore)", rc.Name, first, floor[rc.Name])
		if first <= cut[rc.Name] || first > floor[rc.Name]+1 {
			t.Errorf("restored %s starts counting at j=%d; the checkpoint cut it between %d and %d", rc.Name, first, cut[rc.Name], floor[rc.Name])
		}
		er, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: rc.ContainerId, Cmd: []string{"cat", "/count"}, Timeout: 30})
		must(t, "ExecSync cat /count", err)
		if n, err := strconv.Atoi(strings.TrimSpace(string(er.Stdout))); err != nil || n < first {
			t.Errorf("restored %s: /count is %q, want at least %d", rc.Name, er.Stdout, first)
		}
		st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: rc.ContainerId})
		must(t, "ContainerStatus", err)
		if st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("restored container %s is %v", rc.Name, st.Status.State)
		}
	}
	if after := treeState(t, out); after != before {
		t.Errorf("RestorePod changed the checkpoint:\n%s\nnow:\n%s", before, after)
	}

	// The restored pod, once its supervisor is idle (lean, the usual state
	// of a pod the kubelet checkpoints), is checkpointed again.
	sv := sandboxPidFromInfo(t, c, rr.PodSandboxId)
	deadline = time.Now().Add(40 * time.Second)
	for supervisorImage(sv) != "lean" && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if img := supervisorImage(sv); img != "lean" {
		t.Fatalf("the restored pod's supervisor runs as %q, not lean", img)
	}
	out2 := t.TempDir()
	var rids []string
	for _, rc := range rr.RestoredContainers {
		rids = append(rids, rc.ContainerId)
	}
	_, err = c.CheckpointPod(ctx, &runtimeapi.CheckpointPodRequest{PodSandboxId: rr.PodSandboxId, OutputPath: out2, ContainerIds: rids})
	must(t, "CheckpointPod of the restored pod, from its lean supervisor", err)
	if _, err := stage0.ReadCheckpoint(out2); err != nil {
		t.Errorf("the second checkpoint: %v", err)
	}
	for _, rc := range rr.RestoredContainers {
		b, _ := os.ReadFile(filepath.Join(logDir2, rc.Name+".log"))
		n := strings.Count(string(b), "\n")
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) && strings.Count(string(b), "\n") < n+3 {
			time.Sleep(50 * time.Millisecond)
			b, _ = os.ReadFile(filepath.Join(logDir2, rc.Name+".log"))
		}
		if strings.Count(string(b), "\n") < n+3 {
			t.Errorf("restored %s stopped logging after its checkpoint", rc.Name)
		}
	}
	stopRestored(t, c, rr)
}

// criuLogOf returns the end of the criu log a restore error names.
func criuLogOf(err error) string {
	_, rest, ok := strings.Cut(err.Error(), "(log: ")
	path, _, _ := strings.Cut(rest, ")")
	b, rerr := os.ReadFile(path)
	if !ok || rerr != nil {
		return fmt.Sprintf("(none: %v)", rerr)
	}
	return tail(string(b), 60)
}

// treeState describes every entry under dir: name, mode, size, mtime.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %d\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	must(t, "walk "+dir, err)
	return b.String()
}

// stopRestored stops restored containers with a grace period: their
// counters exit 0 on SIGTERM, at once.
func stopRestored(t *testing.T, c *criClient, rr *runtimeapi.RestorePodResponse) {
	t.Helper()
	for _, rc := range rr.RestoredContainers {
		t0 := time.Now()
		_, err := c.StopContainer(rpcCtx(t), &runtimeapi.StopContainerRequest{ContainerId: rc.ContainerId, Timeout: 30})
		must(t, "StopContainer of restored "+rc.Name, err)
		st, err := c.ContainerStatus(rpcCtx(t), &runtimeapi.ContainerStatusRequest{ContainerId: rc.ContainerId})
		must(t, "ContainerStatus", err)
		if d := time.Since(t0); st.Status.ExitCode != 0 || d > 10*time.Second {
			t.Errorf("restored %s stopped with code %d after %v, want 0 at once (SIGTERM)", rc.Name, st.Status.ExitCode, d)
		}
	}
}

// tarFile returns the content of the regular file name in the tar at p.
func tarFile(t *testing.T, p, name string) string {
	t.Helper()
	b, _ := tarEntry(t, p, name)
	return b
}

// tarEntry returns the content of the regular file name in the tar at p,
// and whether the tar has it.
func tarEntry(t *testing.T, p, name string) (string, bool) {
	t.Helper()
	f, err := os.Open(p)
	must(t, "open "+p, err)
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return "", false
		}
		must(t, "read "+p, err)
		if h.Name == name && h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			must(t, "read "+name, err)
			return string(b), true
		}
	}
}

// checkpointService starts a service whose checkpoints run criu (a path)
// and pulls the test image into it; its pods go at cleanup.
func checkpointService(t *testing.T, criu string) (*testutil.Env, *criService, *criClient, string) {
	t.Helper()
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env, "--criu="+criu, "--checkpoint-restore")
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	t.Cleanup(func() { removeAllPods(t, dialCRI(t, svc)) })
	return env, svc, c, imgID
}

// runCounters runs a sandbox of pc with a started container running
// counterScript for each name (changed by mod, if not nil), and returns the
// sandbox's ID and the containers' IDs in the order of names.
func runCounters(t *testing.T, c *criClient, imgID string, pc *runtimeapi.PodSandboxConfig, mod func(*runtimeapi.ContainerConfig), names ...string) (string, []string) {
	t.Helper()
	ctx := rpcCtx(t)
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	var ids []string
	for _, name := range names {
		cfg := containerConfig(name, imgID, "sh", "-c", counterScript)
		if mod != nil {
			mod(cfg)
		}
		cc, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, Config: cfg, SandboxConfig: pc})
		must(t, "CreateContainer "+name, err)
		_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cc.ContainerId})
		must(t, "StartContainer "+name, err)
		ids = append(ids, cc.ContainerId)
	}
	return rp.PodSandboxId, ids
}

// TestCRICheckpointPodOwnPID: containers with their own PID namespaces
// (the kubelet's default; TestCRICheckpointPod's share the pod's) are
// checkpointed and restored, each in a new PID namespace, and go on;
// restoring them into a pod with a shared PID namespace is refused.
func TestCRICheckpointPodOwnPID(t *testing.T) {
	_, _, c, imgID := checkpointService(t, toolPath(t, "criu"))
	ctx := rpcCtx(t)
	own := func(pc *runtimeapi.PodSandboxConfig) *runtimeapi.PodSandboxConfig {
		pc.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER}}
		return pc
	}
	ownCtr := func(cfg *runtimeapi.ContainerConfig) {
		cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER}}
	}
	logDir := podLogDir(t, c)
	pc := own(podConfig("ckpt-pid", logDir))
	podID, ids := runCounters(t, c, imgID, pc, ownCtr, "one", "two")
	var cfgs []*runtimeapi.ContainerConfig // the same, to restore
	for _, name := range []string{"one", "two"} {
		cfg := containerConfig(name, imgID, "sh", "-c", counterScript)
		ownCtr(cfg)
		cfgs = append(cfgs, cfg)
	}
	count := func(dir, name string, field int) int {
		b, _ := os.ReadFile(filepath.Join(dir, name+".log"))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		f := strings.Fields(lines[len(lines)-1])
		if len(f) <= field {
			return 0
		}
		n, _ := strconv.Atoi(f[field])
		return n
	}
	waitUntil(t, 30*time.Second, "the counters", func() bool { return count(logDir, "one", 4) > 5 && count(logDir, "two", 4) > 5 })
	cut := count(logDir, "one", 4)
	out := t.TempDir()
	_, err := c.CheckpointPod(ctx, &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: out, ContainerIds: ids})
	must(t, "CheckpointPod", err)
	_, err = c.RestorePod(ctx, &runtimeapi.RestorePodRequest{CheckpointPath: out, Config: podConfig("shared", podLogDir(t, c)), ContainerConfigs: cfgs})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("RestorePod into a pod with a shared PID namespace: %v, want FailedPrecondition", err)
	}
	logDir2 := podLogDir(t, c)
	rr, err := c.RestorePod(ctx, &runtimeapi.RestorePodRequest{CheckpointPath: out, Config: own(podConfig("restored-pid", logDir2)), ContainerConfigs: cfgs})
	must(t, "RestorePod", err)
	for _, rc := range rr.RestoredContainers {
		_, err := c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: rc.ContainerId})
		must(t, "StartContainer of restored "+rc.Name, err)
	}
	waitUntil(t, 30*time.Second, "the restored counters", func() bool { return count(logDir2, "one", 4) > 0 && count(logDir2, "two", 4) > 0 })
	b, _ := os.ReadFile(filepath.Join(logDir2, "one.log"))
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	if first, _ := strconv.Atoi(f[4]); first <= cut {
		t.Errorf("restored one starts at j=%d, not past the %d logged before the checkpoint", first, cut)
	}
	// Each is alone in its PID namespace, as its pid 1.
	for _, rc := range rr.RestoredContainers {
		er, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: rc.ContainerId, Cmd: []string{"cat", "/proc/1/cmdline"}, Timeout: 30})
		must(t, "ExecSync cat /proc/1/cmdline", err)
		if !strings.Contains(string(er.Stdout), "i=0; j=0") {
			t.Errorf("restored %s: pid 1 of its PID namespace is %q, not its counter", rc.Name, er.Stdout)
		}
	}
	stopRestored(t, c, rr)
}
