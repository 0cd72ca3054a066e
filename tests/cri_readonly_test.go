package tests

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIReadOnlyDataDir: the data dir's filesystem turns read-only under
// a running pod, as ext4 (errors=remount-ro) does on a disk error. The
// service goes on answering what only reads (lists, statuses, stats,
// images, exec) and starts again in that state; what writes fails with
// FailedPrecondition naming the read-only filesystem. After the repair
// (a reboot and fsck) the kubelet's cleanup releases the pod and new pods
// run.
func TestCRIReadOnlyDataDir(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	img := filepath.Join(t.TempDir(), "data.ext4")
	mountData := func() error {
		if out, err := exec.Command("mount", "-o", "loop", img, env.DataDir).CombinedOutput(); err != nil {
			return fmt.Errorf("cannot mount %s on the data dir: %v: %s", img, err, out)
		}
		return nil
	}
	if out, err := exec.Command("sh", "-c", "truncate -s 256M "+img+" && mkfs.ext4 -q -F "+img).CombinedOutput(); err != nil {
		t.Skipf("cannot make an ext4 filesystem: %v: %s", err, out)
	}
	if err := mountData(); err != nil {
		t.Skip(err)
	}
	// the data dir's mode as installed (tmpfiles.d) instead of mkfs's 0755;
	// env.Root above it is 0700
	must(t, "chmod the data dir", os.Chmod(env.DataDir, 0o751))
	t.Cleanup(func() { syscall.Unmount(env.DataDir, syscall.MNT_DETACH) })
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	logDir := podLogDirOf(t, svc)
	reg := testutil.StartRegistry(t)
	ref := reg.Push(t, "rkt-test/busybox:1", testutil.Busybox(t))
	pulled, err := c.PullImage(rpcCtx(t), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	must(t, "PullImage", err)
	imgID := pulled.ImageRef
	pod, ctr := runPodWithContainer(t, c, "ro-0", imgID, logDir)

	// what ext4 does on an error it cannot go on after
	if out, err := exec.Command("mount", "-o", "remount,abort", env.DataDir).CombinedOutput(); err != nil {
		t.Skipf("cannot abort the data dir's ext4: %v: %s", err, out)
	}
	reads := func(when string) {
		t.Helper()
		ctx := rpcCtx(t)
		for what, call := range map[string]func() error{
			"ListPodSandbox": func() error {
				l, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
				if err == nil && len(l.Items) != 1 {
					return errors.New("not the one sandbox")
				}
				return err
			},
			"ListContainers": func() error { _, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); return err },
			"ContainerStatus": func() error {
				_, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctr})
				return err
			},
			"PodSandboxStatus": func() error {
				_, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: pod})
				return err
			},
			"ListContainerStats": func() error {
				_, err := c.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{})
				return err
			},
			"ImageFsInfo": func() error { _, err := c.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{}); return err },
			"ListImages": func() error {
				l, err := c.ListImages(ctx, &runtimeapi.ListImagesRequest{})
				if err == nil && len(l.Images) != 1 {
					return errors.New("not the one image")
				}
				return err
			},
			"ImageStatus": func() error {
				r, err := c.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
				if err == nil && r.Image == nil {
					return errors.New("image not found")
				}
				return err
			},
			"ExecSync": func() error {
				r, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ctr, Cmd: []string{"true"}, Timeout: 10})
				if err == nil && r.ExitCode != 0 {
					return errors.New("exit code " + string(r.Stderr))
				}
				return err
			},
		} {
			if err := call(); err != nil {
				t.Errorf("%s on a read-only data dir (%s): %v", what, when, err)
			}
		}
	}
	reads("the service running")

	ctx := rpcCtx(t)
	writeFails := func(what string, err error, code string) {
		t.Helper()
		if (code != "" && statusCode(err) != code) || !strings.Contains(err.Error(), "read-only file system") {
			t.Errorf("%s on a read-only data dir: %v; want %s naming the read-only file system", what, err, code)
		}
	}
	// the image the node has, as the registry serves it: nothing to write
	if _, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		t.Errorf("PullImage of the image the node has, on a read-only data dir: %v", err)
	}
	other := reg.Push(t, "rkt-test/other:1", testutil.Image(t, testutil.ImageConfig{Cmd: []string{"true"}}, peerBusyboxLayer(t)))
	_, err = c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: other}})
	writeFails("PullImage", err, "FailedPrecondition")
	_, err = c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: podConfig("ro-1", logDir)})
	writeFails("RunPodSandbox", err, "FailedPrecondition")
	_, err = c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod,
		Config: containerConfig("c2", imgID, "sleep", "1000"), SandboxConfig: podConfig("ro-0", logDir)})
	writeFails("CreateContainer", err, "FailedPrecondition")

	svc.stop()
	svc.Restart()
	c = dialCRI(t, svc)
	reads("the service restarted")
	_, err = c.StopPodSandbox(rpcCtx(t), &runtimeapi.StopPodSandboxRequest{PodSandboxId: pod})
	writeFails("StopPodSandbox", err, "FailedPrecondition") // the teardown's EROFS
	if st, err := c.ContainerStatus(rpcCtx(t), &runtimeapi.ContainerStatusRequest{ContainerId: ctr}); err != nil ||
		st.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("container after StopPodSandbox on a read-only data dir: %v %v; want it stopped", st.GetStatus().GetState(), err)
	}

	// the repair: a reboot, fsck, the filesystem mounted again
	rebootNode(t, svc)
	must(t, "unmount the data dir", syscall.Unmount(env.DataDir, 0))
	if out, err := exec.Command("e2fsck", "-f", "-y", img).CombinedOutput(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() > 1 { // 1: errors corrected
			t.Fatalf("e2fsck: %v: %s", err, out)
		}
	}
	must(t, "mount the data dir again", mountData())
	svc.Restart()
	c = dialCRI(t, svc)
	ctx = rpcCtx(t)
	_, err = c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: pod})
	must(t, "StopPodSandbox after the repair", err)
	_, err = c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: pod})
	must(t, "RemovePodSandbox after the repair", err)
	runPodWithContainer(t, c, "ro-2", imgID, logDir)
}
