package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rkt/rkt/tests/testutil"
)

// crictl runs the crictl binary against a service.
type crictl struct {
	t   *testing.T
	bin string
	svc *criService
}

func newCrictl(t *testing.T, svc *criService) *crictl {
	return &crictl{t: t, bin: toolPath(t, "crictl"), svc: svc}
}

// run runs crictl and returns stdout, stderr and its exit error.
func (c *crictl) run(args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	full := append([]string{"--runtime-endpoint", c.svc.Endpoint, "--image-endpoint", c.svc.Endpoint, "--timeout", "120s"}, args...)
	cmd := exec.CommandContext(ctx, c.bin, full...)
	cmd.Env = append(os.Environ(), "CRI_CONFIG_FILE=/dev/null")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// ok runs crictl and fails the test unless it succeeds; it returns stdout
// trimmed.
func (c *crictl) ok(args ...string) string {
	c.t.Helper()
	out, errOut, err := c.run(args...)
	if err != nil {
		c.t.Fatalf("crictl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return strings.TrimSpace(out)
}

// writeJSON writes v as JSON in dir/name and returns the path.
func writeJSON(t *testing.T, dir, name string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCRICrictlLifecycle drives a pod and container through their whole
// lifecycle with crictl: pull, images, runp, create, start, ps, pods,
// inspect, inspectp, exec (sync and streaming), logs, stats, stop, rm,
// stopp, rmp, rmi.
func TestCRICrictlLifecycle(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	ref := reg.Push(t, "rkt-test/busybox:1", testutil.Busybox(t))
	imgID := testutil.ImageID(t, testutil.Busybox(t))
	svc := startCRIService(t, env)
	cc := newCrictl(t, svc)

	if out := cc.ok("pull", ref); !strings.Contains(out, imgID) {
		t.Fatalf("crictl pull printed %q, want the image ID %s", out, imgID)
	}
	if out := cc.ok("images", "-q", "--no-trunc"); !strings.Contains(out, imgID) {
		t.Fatalf("crictl images -q does not list %s:\n%s", imgID, out)
	}
	var imgInfo struct {
		Status struct {
			ID       string   `json:"id"`
			RepoTags []string `json:"repoTags"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(cc.ok("inspecti", ref)), &imgInfo); err != nil || imgInfo.Status.ID != imgID {
		t.Fatalf("crictl inspecti: id %q (want %s), err %v", imgInfo.Status.ID, imgID, err)
	}

	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	podJSON := writeJSON(t, dir, "pod.json", map[string]any{
		"metadata":      map[string]any{"name": "crictl-pod", "namespace": "rkt-test", "uid": "crictl-pod-uid"},
		"hostname":      "crictl-pod",
		"log_directory": logDir,
		"labels":        map[string]string{"app": "crictl"},
		"linux":         map[string]any{},
	})
	ctrJSON := writeJSON(t, dir, "ctr.json", map[string]any{
		"metadata": map[string]any{"name": "sleeper"},
		"image":    map[string]any{"image": ref},
		"command":  []string{"sh", "-c", "echo hello from rkt; exec sleep 100000"},
		"log_path": "sleeper.log",
		"linux":    map[string]any{},
	})
	pod := cc.ok("runp", podJSON)
	t.Cleanup(func() { cc.run("stopp", pod); cc.run("rmp", "-f", pod) })
	ctr := cc.ok("create", pod, ctrJSON, podJSON)
	cc.ok("start", ctr)

	if out := cc.ok("pods", "-q", "--no-trunc"); !strings.Contains(out, pod) {
		t.Fatalf("crictl pods does not list %s:\n%s", pod, out)
	}
	if out := cc.ok("ps", "-q", "--no-trunc", "--state", "running"); !strings.Contains(out, ctr) {
		t.Fatalf("crictl ps does not list running %s:\n%s", ctr, out)
	}
	var ctrInfo struct {
		Status struct {
			State   string `json:"state"`
			LogPath string `json:"logPath"`
			ImageID string `json:"imageId"`
		} `json:"status"`
	}
	must(t, "parse crictl inspect", json.Unmarshal([]byte(cc.ok("inspect", ctr)), &ctrInfo))
	if ctrInfo.Status.State != "CONTAINER_RUNNING" || ctrInfo.Status.LogPath != filepath.Join(logDir, "sleeper.log") || ctrInfo.Status.ImageID != imgID {
		t.Fatalf("crictl inspect: %+v", ctrInfo.Status)
	}
	var podInfo struct {
		Status struct {
			State   string `json:"state"`
			Network struct {
				IP string `json:"ip"`
			} `json:"network"`
		} `json:"status"`
	}
	must(t, "parse crictl inspectp", json.Unmarshal([]byte(cc.ok("inspectp", pod)), &podInfo))
	if podInfo.Status.State != "SANDBOX_READY" || podInfo.Status.Network.IP == "" {
		t.Fatalf("crictl inspectp: %+v", podInfo.Status)
	}

	if out := cc.ok("exec", "-s", ctr, "echo", "exec-sync"); out != "exec-sync" {
		t.Fatalf("crictl exec -s printed %q", out)
	}
	if out := cc.ok("exec", ctr, "hostname"); out != "crictl-pod" {
		t.Fatalf("crictl exec hostname printed %q", out)
	}
	// (crictl turns every non-zero exit code into 1; TestCRIErrorCodes
	// checks the code itself through the API)
	if _, _, err := cc.run("exec", "-s", ctr, "sh", "-c", "exit 3"); err == nil {
		t.Fatal("crictl exec of a failing command succeeded")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if strings.Contains(cc.ok("logs", ctr), "hello from rkt") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("crictl logs never showed the container's output")
		}
		time.Sleep(200 * time.Millisecond)
	}
	b, err := os.ReadFile(filepath.Join(logDir, "sleeper.log"))
	if err != nil || !strings.Contains(string(b), " stdout F hello from rkt") {
		t.Fatalf("CRI log file: %q, %v", b, err)
	}
	if out := cc.ok("stats", "--id", ctr, "-o", "json"); !strings.Contains(out, ctr) {
		t.Fatalf("crictl stats does not report %s:\n%s", ctr, out)
	}

	cc.ok("stop", "--timeout", "5", ctr)
	must(t, "parse crictl inspect", json.Unmarshal([]byte(cc.ok("inspect", ctr)), &ctrInfo))
	if ctrInfo.Status.State != "CONTAINER_EXITED" {
		t.Fatalf("after stop the container is %s", ctrInfo.Status.State)
	}
	cc.ok("rm", ctr)
	if out := cc.ok("ps", "-a", "-q", "--no-trunc"); strings.Contains(out, ctr) {
		t.Fatalf("crictl ps -a still lists removed %s", ctr)
	}
	cc.ok("stopp", pod)
	cc.ok("rmp", pod)
	if out := cc.ok("pods", "-q", "--no-trunc"); strings.Contains(out, pod) {
		t.Fatalf("crictl pods still lists removed %s", pod)
	}
	cc.ok("rmi", ref)
	if out := cc.ok("images", "-q", "--no-trunc"); strings.Contains(out, imgID) {
		t.Fatalf("crictl images still lists removed %s", imgID)
	}
}
