package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIHungMount: a container whose init hangs (its working directory
// on a FUSE server that never answers, bind-mounted from the host), or an
// exec whose set-up hangs so, takes neither its pod nor the service with
// it. The sibling's exec probe (1 s) answers meanwhile, another container
// of the pod starts, the hung processes are killed once their callers have
// given up, and the container stays created: its caller was told that the
// start failed.
func TestCRIHungMount(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	logDir := podLogDirOf(t, svc)
	pod, first := runPodWithContainer(t, c, "hung", imgID, logDir)

	// host is a shared mount: what is mounted below it reaches the
	// containers that mount it with HostToContainer propagation.
	host := t.TempDir()
	must(t, "mkdir", os.Mkdir(filepath.Join(host, "sub"), 0o700))
	must(t, "bind host", unix.Mount(host, host, "", unix.MS_BIND, ""))
	t.Cleanup(func() { unix.Unmount(host, unix.MNT_DETACH) })
	must(t, "make host shared", unix.Mount("", host, "", unix.MS_SHARED, ""))
	walker := containerConfig("walker", imgID, "sleep", "100000")
	walker.Mounts = []*runtimeapi.Mount{{ContainerPath: "/walk", HostPath: host,
		Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER}}
	walker.WorkingDir = "/walk/sub"
	r, err := c.CreateContainer(rpcCtx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: walker,
		SandboxConfig: podConfig("hung", logDir)})
	must(t, "CreateContainer walker", err)
	walking := r.ContainerId
	_, err = c.StartContainer(rpcCtx(t), &runtimeapi.StartContainerRequest{ContainerId: walking})
	must(t, "StartContainer walker", err)
	hungFUSE(t, filepath.Join(host, "sub"))

	// An exec whose working directory hangs fails at its deadline.
	x, err := c.ExecSync(rpcCtx(t), &runtimeapi.ExecSyncRequest{ContainerId: walking, Cmd: []string{"true"}, Timeout: 1})
	if err == nil && x.ExitCode == 0 {
		t.Fatal("an exec whose working directory hangs succeeded")
	}

	// A start whose working directory hangs fails at its deadline.
	cfg := containerConfig("stuck", imgID, "sleep", "100000")
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/hung", HostPath: host}}
	cfg.WorkingDir = "/hung/sub"
	r, err = c.CreateContainer(rpcCtx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: cfg,
		SandboxConfig: podConfig("hung", logDir)})
	must(t, "CreateContainer", err)
	stuck := r.ContainerId
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: stuck})
	cancel()
	if err == nil {
		t.Fatal("StartContainer of a container whose working directory hangs succeeded")
	}

	// The pod's other containers are served meanwhile.
	x, err = c.ExecSync(rpcCtx(t), &runtimeapi.ExecSyncRequest{ContainerId: first, Cmd: []string{"true"}, Timeout: 1})
	if err != nil || x.ExitCode != 0 {
		t.Errorf("an exec probe of the pod's other container while one hangs: %v %v", x, err)
	}
	next := containerConfig("next", imgID, "sleep", "100000")
	r, err = c.CreateContainer(rpcCtx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: next,
		SandboxConfig: podConfig("hung", logDir)})
	must(t, "CreateContainer beside the hung one", err)
	_, err = c.StartContainer(rpcCtx(t), &runtimeapi.StartContainerRequest{ContainerId: r.ContainerId})
	must(t, "StartContainer beside the hung one", err)

	// The hung processes are killed after their call's deadline (and a
	// grace).
	deadline := time.Now().Add(30 * time.Second)
	hung := hungInCgroup(t, svc.cgroupParent())
	for len(hung) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		hung = hungInCgroup(t, svc.cgroupParent())
	}
	if len(hung) > 0 {
		t.Errorf("processes of the pod still wait on the FUSE server 30 s after the start's deadline:\n%s", strings.Join(hung, "\n"))
		logs, _ := filepath.Glob(filepath.Join(env.DataDir, "pods", "*", "*", "stage1.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", l, b)
		}
	}
	st, err := c.ContainerStatus(rpcCtx(t), &runtimeapi.ContainerStatusRequest{ContainerId: stuck})
	must(t, "ContainerStatus", err)
	if s := st.GetStatus().GetState(); s != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Errorf("the container whose start failed is %v, want CREATED", s)
	}
	_, err = c.RemoveContainer(rpcCtx(t), &runtimeapi.RemoveContainerRequest{ContainerId: stuck})
	must(t, "RemoveContainer of the hung container", err)
	_, err = c.ContainerStatus(rpcCtx(t), &runtimeapi.ContainerStatusRequest{ContainerId: stuck})
	if status.Code(err) != codes.NotFound {
		t.Errorf("ContainerStatus after its removal: %v, want NotFound", err)
	}
}

// hungFUSE mounts at dir a FUSE filesystem whose server never answers:
// every access below it blocks (killably) until the test ends.
func hungFUSE(t *testing.T, dir string) {
	t.Helper()
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no FUSE here: %v", err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fd)
	if err := unix.Mount("rkt-test-hung", dir, "fuse", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		unix.Close(fd)
		t.Skipf("cannot mount FUSE here: %v", err)
	}
	t.Cleanup(func() {
		unix.Close(fd) // the connection aborts: whoever waits gets ENOTCONN
		_ = unix.Unmount(dir, unix.MNT_DETACH)
	})
}

// hungInCgroup lists the processes under the cgroup parent that wait on a
// FUSE server.
func hungInCgroup(t *testing.T, parent string) []string {
	t.Helper()
	stacks, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/stack")
	var hung []string
	for _, p := range stacks {
		st, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(st), "fuse_") {
			continue
		}
		cg, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(p))), "cgroup"))
		if err == nil && strings.Contains(string(cg), parent+"/") {
			pid := filepath.Dir(filepath.Dir(filepath.Dir(p)))
			cmd, _ := os.ReadFile(pid + "/cmdline")
			hung = append(hung, fmt.Sprintf("%s (%s):\n%s", p, strings.ReplaceAll(string(cmd), "\x00", " "), st))
		}
	}
	return hung
}
