package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// supervisorImage is the image a pod's supervisor runs: "run" (Go, since
// its start), "lean" (idle, C) or "resume" (Go again).
func supervisorImage(pid int) string {
	if f := strings.Fields(cmdline(pid)); len(f) > 1 {
		return f[1]
	}
	return ""
}

// TestCRIIdleSupervisor: a pod left idle gets the lean supervisor, which
// keeps logging the container's output; created containers not started yet
// keep it Go; the next calls find the Go supervisor again, and the pod
// stops and goes without leaks.
func TestCRIIdleSupervisor(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	logDir := podLogDirOf(t, svc)
	ctx := context.Background()
	pc := podConfig("idle", logDir)
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	cc, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, SandboxConfig: pc,
		Config: containerConfig("ticker", imgID, "sh", "-c", "i=0; while true; do i=$((i+1)); echo line$i; sleep 0.3; done")})
	must(t, "CreateContainer", err)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cc.ContainerId})
	must(t, "StartContainer", err)
	sv := sandboxPidFromInfo(t, c, rp.PodSandboxId)
	// Created containers (prestarted: their init waits on the Go
	// supervisor) keep it from going lean past its idle delay (15 s);
	// started or removed after it, they run or go.
	late, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, SandboxConfig: pc,
		Config: containerConfig("late", imgID, "sh", "-c", "echo late; exec sleep 1000")})
	must(t, "CreateContainer", err)
	gone, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, SandboxConfig: pc,
		Config: containerConfig("gone", imgID, "sleep", "1000")})
	must(t, "CreateContainer", err)
	for end := time.Now().Add(17 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if img := supervisorImage(sv); img == "lean" {
			t.Fatalf("the supervisor went lean with created containers")
		}
	}
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: late.ContainerId})
	must(t, "StartContainer", err)
	_, err = c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: gone.ContainerId})
	must(t, "RemoveContainer", err)
	st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: late.ContainerId})
	if err != nil || st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("ContainerStatus of the container started after the delay: %+v %v", st, err)
	}
	deadline := time.Now().Add(40 * time.Second)
	for supervisorImage(sv) != "lean" && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if img := supervisorImage(sv); img != "lean" {
		t.Fatalf("the idle supervisor runs as %q, not lean", img)
	}
	logPath := filepath.Join(logDir, "ticker.log")
	lines := func() int {
		b, _ := os.ReadFile(logPath)
		return strings.Count(string(b), " stdout F line")
	}
	before := lines()
	time.Sleep(time.Second)
	if after := lines(); after <= before || supervisorImage(sv) != "lean" {
		t.Errorf("log lines while lean: %d, then %d (supervisor: %s)", before, after, supervisorImage(sv))
	}
	es, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: cc.ContainerId, Cmd: []string{"echo", "hi"}, Timeout: 10})
	if err != nil || es.ExitCode != 0 || string(es.Stdout) != "hi\n" {
		t.Fatalf("ExecSync on an idle pod: %+v %v", es, err)
	}
	if img := supervisorImage(sv); img != "resume" {
		t.Errorf("after a call the supervisor runs as %q, not resume", img)
	}
	st, err = c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: cc.ContainerId})
	if err != nil || st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("ContainerStatus: %+v %v", st, err)
	}
	_, err = c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: cc.ContainerId, Timeout: 1})
	must(t, "StopContainer", err)
	st, err = c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: cc.ContainerId})
	if err != nil || st.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Status.ExitCode != 143 { // SIGTERM
		t.Errorf("ContainerStatus after StopContainer: %+v %v", st, err)
	}
	if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), " stdout F line1\n") {
		t.Errorf("container log:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(logDir, "late.log")); !strings.Contains(string(b), " stdout F late\n") {
		t.Errorf("log of the container started after the delay:\n%s", b)
	}
	if _, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: gone.ContainerId}); err == nil {
		t.Errorf("the removed container is still there")
	}
}
