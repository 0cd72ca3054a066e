package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIRestoreContainer: a CreateContainer whose image is a container
// checkpoint restores it, as under CRI-O and containerd: `crictl create`
// with the archive's path as image, and a pulled checkpoint image (the
// archive as the only layer of an image with nothing to run, as the
// Kubernetes documentation builds one with buildah). The restored
// container is CREATED, runs the checkpointed command with the request's
// name and log, and its start resumes the counter from the cut in a pod of
// its own; beside a running container whose PID it needs (a shared PID
// namespace) the start fails and leaves that container running. What
// cannot be restored is refused with its code and leaves nothing.
func TestCRIRestoreContainer(t *testing.T) {
	env, svc, c, imgID := checkpointService(t, toolPath(t, "criu"))
	ctx := rpcCtx(t)
	logDir := podLogDir(t, c)
	pc := podConfig("restore-src", logDir)
	_, ids := runCounters(t, c, imgID, pc, nil, "one")
	count := counterLogCount
	waitUntil(t, 30*time.Second, "the counter", func() bool { return count(logDir, "one", true) > 5 })
	archive := filepath.Join(t.TempDir(), "one.tar")
	cut := count(logDir, "one", true)
	_, err := c.CheckpointContainer(ctx, &runtimeapi.CheckpointContainerRequest{ContainerId: ids[0], Location: archive})
	must(t, "CheckpointContainer", err)
	// the restored counter goes on from between cut and floor
	restoredFrom := func(dir, name string) {
		t.Helper()
		floor := count(logDir, "one", true)
		waitUntil(t, 30*time.Second, "the restored counter", func() bool { return count(dir, name, true) > 0 })
		if first := count(dir, name, false); first <= cut || first > floor+1 {
			t.Errorf("restored %s starts counting at j=%d; the checkpoint cut it between %d and %d", name, first, cut, floor)
		}
	}

	// crictl create with the archive as image, into a new pod
	cr := newCrictl(t, svc)
	dir := podLogDir(t, c)
	podJSON, _ := json.Marshal(map[string]any{
		"metadata":      map[string]any{"name": "restored", "namespace": "restore", "uid": "restored-uid"},
		"log_directory": dir, "linux": map[string]any{}})
	ctrJSON, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"name": "counter"}, "image": map[string]any{"image": archive},
		"log_path": "counter.log", "linux": map[string]any{}})
	must(t, "write pod.json", os.WriteFile(filepath.Join(dir, "pod.json"), podJSON, 0o600))
	must(t, "write ctr.json", os.WriteFile(filepath.Join(dir, "ctr.json"), ctrJSON, 0o600))
	pod := strings.TrimSpace(cr.ok("runp", filepath.Join(dir, "pod.json")))
	ctr := strings.TrimSpace(cr.ok("create", pod, filepath.Join(dir, "ctr.json"), filepath.Join(dir, "pod.json")))
	st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctr})
	must(t, "ContainerStatus", err)
	if s := st.Status; s.State != runtimeapi.ContainerState_CONTAINER_CREATED || s.Metadata.GetName() != "counter" ||
		s.ImageRef != imgID || s.Image.GetImage() != archive {
		t.Errorf("the restored container: %v %s, image %s (%s); want CREATED counter, the archive of %s", s.State, s.Metadata.GetName(), s.Image.GetImage(), s.ImageRef, imgID)
	}
	if ents, _ := os.ReadDir(filepath.Join(env.DataDir, "pods", "run", pod, "checkpoints")); len(ents) != 0 {
		t.Errorf("the extracted archive is left in the pod: %v", ents)
	}
	cr.ok("start", ctr)
	restoredFrom(dir, "counter")
	cr.ok("stop", ctr)

	// A checkpoint image, pulled, restored beside a running container.
	layer, err := os.ReadFile(archive)
	must(t, "read the archive", err)
	reg := testutil.StartRegistry(t)
	ref := reg.Push(t, "rkt-test/checkpoint-one:1", testutil.Image(t, testutil.ImageConfig{}, testutil.LayerFromTar(t, layer)))
	_, err = c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	must(t, "PullImage of the checkpoint image", err)
	cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "from-image"},
		Image: &runtimeapi.ImageSpec{Image: ref}, LogPath: "from-image.log", Labels: map[string]string{"restored": "yes"}}
	// Into a pod whose shared PID namespace has a running container with
	// the checkpointed process's PID: criu cannot give it its PID, and the
	// start fails, leaving the neighbour running and nothing behind.
	logDir4 := podLogDir(t, c)
	pc4 := podConfig("restored-beside", logDir4)
	pod4, neighbour := runCounters(t, c, imgID, pc4, nil, "neighbour")
	cc, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod4, Config: cfg, SandboxConfig: pc4})
	must(t, "CreateContainer from the checkpoint image beside a container", err)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cc.ContainerId})
	if err == nil || !strings.Contains(err.Error(), "File exists") {
		t.Errorf("StartContainer of a restore whose PID is taken: %v, want criu's 'File exists'", err)
	}
	// nothing of the failed restore stays in the pod's cgroups (criu's
	// helpers, orphaned when it fails, are reaped by PID 1)
	var left []string
	waitUntil(t, 10*time.Second, "the failed restore's processes gone", func() bool {
		left = nil
		procs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
		for _, f := range procs {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), pod4) {
				if cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "cmdline")); !strings.Contains(string(cmd), counterScript) {
					left = append(left, filepath.Dir(f))
				}
			}
		}
		return len(left) == 0
	})
	st, err = c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: neighbour[0]})
	must(t, "ContainerStatus of the neighbour", err)
	if st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("the neighbour of a failed restore is %v", st.Status.State)
	}
	// Into a pod of its own.
	logDir3 := podLogDir(t, c)
	pc3 := podConfig("restored-image", logDir3)
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc3})
	must(t, "RunPodSandbox", err)
	cc, err = c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, Config: cfg, SandboxConfig: pc3})
	must(t, "CreateContainer from the checkpoint image", err)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cc.ContainerId})
	if err != nil {
		t.Logf("criu's restore log:\n%s", criuLogOf(err))
	}
	must(t, "StartContainer of the container from the checkpoint image", err)
	restoredFrom(logDir3, "from-image")
	st, err = c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: cc.ContainerId})
	must(t, "ContainerStatus", err)
	if st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.Status.Labels["restored"] != "yes" || st.Status.Image.GetImage() != ref {
		t.Errorf("the container from the checkpoint image: %v, labels %v, image %s", st.Status.State, st.Status.Labels, st.Status.Image.GetImage())
	}

	// Refused: their codes, and no container left.
	before, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	must(t, "ListContainers", err)
	notCkpt := filepath.Join(t.TempDir(), "junk.tar")
	must(t, "write", os.WriteFile(notCkpt, []byte("not a tar"), 0o600))
	for _, tc := range []struct {
		what, image string
		code        codes.Code
	}{
		{"a missing archive", archive + ".missing", codes.InvalidArgument},
		{"a file that is no archive", notCkpt, codes.InvalidArgument},
		{"a directory", filepath.Dir(archive), codes.InvalidArgument},
	} {
		cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "refused"}, Image: &runtimeapi.ImageSpec{Image: tc.image}}
		_, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, Config: cfg, SandboxConfig: pc3})
		if status.Code(err) != tc.code {
			t.Errorf("CreateContainer from %s: %v, want %v", tc.what, err, tc.code)
		}
	}
	_, err = c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ctr})
	must(t, "RemoveContainer", err)
	after, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	must(t, "ListContainers", err)
	if len(after.Containers) != len(before.Containers)-1 {
		t.Errorf("refused restores left containers: %d, want %d", len(after.Containers), len(before.Containers)-1)
	}
}

// counterLogCount returns j, counterScript's in-memory count, of the first
// (or the last) line of the container name's log in dir; 0 without one.
func counterLogCount(dir, name string, last bool) int {
	b, _ := os.ReadFile(filepath.Join(dir, name+".log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	l := lines[0]
	if last {
		l = lines[len(lines)-1]
	}
	if f := strings.Fields(l); len(f) >= 5 {
		n, _ := strconv.Atoi(f[4])
		return n
	}
	return 0
}
