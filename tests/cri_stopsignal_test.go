package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIStopSignal: StopContainer sends the container's stop signal (the
// CRI config's, else the image's STOPSIGNAL, else SIGTERM) and
// ContainerStatus reports it. Each app traps only its own signal, so a
// wrong signal would leave it running until the SIGKILL after the timeout
// (exit 137) instead of its clean exit with the signal's name in its log.
func TestCRIStopSignal(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	reg := testutil.StartRegistry(t)
	base := testutil.Busybox(t)
	cf, err := base.ConfigFile()
	must(t, "read busybox config", err)
	cfg := cf.Config
	cfg.StopSignal = "SIGUSR1"
	img, err := mutate.Config(base, cfg)
	must(t, "set STOPSIGNAL", err)
	usr1Ref := reg.Push(t, "rkt-test/stopsignal:1", img)
	pr, err := c.PullImage(rpcCtx(t), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: usr1Ref}})
	must(t, "PullImage "+usr1Ref, err)
	logDir := podLogDir(t, c)
	ctx := rpcCtx(t)

	pc := podConfig("stopsig", logDir)
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	tests := []struct {
		name  string
		image string
		sig   runtimeapi.Signal
		trap  string
		want  runtimeapi.Signal
	}{
		{"quit", imgID, runtimeapi.Signal_SIGNAL_SIGQUIT, "QUIT", runtimeapi.Signal_SIGNAL_SIGQUIT},
		{"rtmin", imgID, runtimeapi.Signal_SIGNAL_SIGRTMINPLUS1, "35", runtimeapi.Signal_SIGNAL_SIGRTMINPLUS1},
		{"image", pr.ImageRef, runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT, "USR1", runtimeapi.Signal_SIGNAL_SIGUSR1},
		{"default", imgID, runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT, "TERM", runtimeapi.Signal_SIGNAL_SIGTERM},
	}
	ids := map[string]string{}
	for _, tc := range tests {
		// Every other catchable signal is ignored: only the right one ends
		// the loop.
		script := "trap '' HUP INT QUIT USR1 USR2 TERM 35; trap 'echo stopped-by-" + tc.name + "; exit 0' " + tc.trap +
			"; echo ready; while true; do sleep 0.1; done"
		cc := containerConfig(tc.name, tc.image, "sh", "-c", script)
		cc.StopSignal = tc.sig
		r, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, Config: cc, SandboxConfig: pc})
		must(t, "CreateContainer "+tc.name, err)
		_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: r.ContainerId})
		must(t, "StartContainer "+tc.name, err)
		ids[tc.name] = r.ContainerId
	}
	for _, tc := range tests {
		id := ids[tc.name]
		st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		must(t, "ContainerStatus "+tc.name, err)
		if st.Status.StopSignal != tc.want {
			t.Errorf("%s: ContainerStatus stop signal %v, want %v", tc.name, st.Status.StopSignal, tc.want)
		}
		logPath := filepath.Join(logDir, tc.name+".log")
		waitUntil(t, 10*time.Second, tc.name+" ready", func() bool {
			b, _ := os.ReadFile(logPath)
			return strings.Contains(string(b), "ready")
		})
		_, err = c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 10})
		must(t, "StopContainer "+tc.name, err)
		st, err = c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		must(t, "ContainerStatus "+tc.name, err)
		b, _ := os.ReadFile(logPath)
		if st.Status.ExitCode != 0 || !strings.Contains(string(b), "stopped-by-"+tc.name) {
			t.Errorf("%s: stopped with exit code %d, log %q; want a clean exit by the trap", tc.name, st.Status.ExitCode, b)
		}
	}
}

// waitUntil polls cond until it holds or the timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStopSignalCLI: `rkt run --stop-signal` is the CLI's way to the same
// stage0 option: `rkt app stop` sends it, and the app exits through its
// trap instead of being killed after the grace period.
func TestStopSignalCLI(t *testing.T) {
	requireRoot(t)
	pe := newPodEnv(t)
	uuid := pe.runDetached("--net=none", pe.image, "--name=quitter", "--stop-signal=SIGQUIT", "--exec=/bin/sh", "--",
		"-c", "trap '' TERM; trap 'exit 0' QUIT; while true; do sleep 0.1; done")
	pe.waitState(uuid, "running", 30*time.Second)
	time.Sleep(300 * time.Millisecond) // let the shell set its traps
	start := time.Now()
	pe.RunOK("app", "stop", uuid, "--app=quitter", "--timeout=20s")
	p := pe.status(uuid)
	if len(p.Apps) != 1 || p.Apps[0].ExitCode != 0 || p.Apps[0].Signal != "" || time.Since(start) > 10*time.Second {
		t.Errorf("app stopped with SIGQUIT: %+v after %v; want exit 0 through the trap at once", p.Apps, time.Since(start))
	}
	if r := pe.run("--net=none", pe.image, "--stop-signal=SIGNOPE", "--exec=/bin/true"); r.Code == 0 || !strings.Contains(r.Stderr, "SIGNOPE") {
		t.Errorf("rkt run with an unknown stop signal: %s", r)
	}
}
