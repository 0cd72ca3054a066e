package tests

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// chaosRounds is RKT_CHAOS_ROUNDS, else a short run for make check
// (`make chaos` runs a long one).
func chaosRounds(t *testing.T) int {
	if s := os.Getenv("RKT_CHAOS_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("bad RKT_CHAOS_ROUNDS %q", s)
		}
		return n
	}
	return 6
}

// chaosSeed is RKT_CHAOS_SEED, else a new one.
func chaosSeed(t *testing.T) int64 {
	if s := os.Getenv("RKT_CHAOS_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("bad RKT_CHAOS_SEED %q", s)
		}
		return n
	}
	return time.Now().UnixNano()
}

// TestChaos: rounds of SIGKILL of the service (and of a pod's stage1) at
// random points of pod lifecycles and pulls, each followed by what a
// kubelet does (stop and remove every sandbox it lists, remove the images
// it pulled) and then by a leak check with no operator: the node must
// converge to nothing left behind (pods, mounts, netns, cgroups, iptables,
// IPAM, CNI cache, runc state, processes, pod dirs CRI does not list,
// unreferenced blobs and trees, temporary files).
func TestChaos(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env, "--repair-interval=1s")
	c := dialCRI(t, svc)
	t.Cleanup(func() { removeAllPods(t, c) })
	base, _ := pullTestImage(t, c)
	baseBlobs := len(dirEntries(t, casDir(env.DataDir, "blobs", "sha256")))
	reg := testutil.StartRegistry(t)
	reg.SetBlobRate(2 << 20)
	seed := chaosSeed(t)
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d (RKT_CHAOS_SEED replays its flows and delays)", seed)

	for round := 0; round < chaosRounds(t); round++ {
		flows := []struct {
			name string
			run  func(ctx context.Context) string
		}{
			{"lifecycle", func(ctx context.Context) string { return chaosLifecycle(ctx, c, base, round) }},
			{"pull", func(ctx context.Context) string {
				noise := make([]byte, 512<<10) // incompressible: the pull takes a while
				rng.Read(noise)
				img := testutil.BusyboxWith(t, testutil.ImageConfig{}, testutil.Layer(t, testutil.Entry{Name: "noise", Body: noise}))
				ref := reg.Push(t, fmt.Sprintf("chaos/r%d:1", round), img)
				_, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
				return fmt.Sprint(err)
			}},
		}
		f := flows[rng.Intn(len(flows))]
		killStage1 := rng.Intn(3) == 0
		delay := time.Duration(rng.Intn(400)) * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan string, 1)
		go func() { done <- f.run(ctx) }()
		time.Sleep(delay)
		if killStage1 {
			killAStage1(t, env.DataDir)
		}
		svc.Kill()
		cancel()
		outcome := <-done
		t.Logf("round %d: %s killed after %v (stage1 too: %v): %.120s", round, f.name, delay, killStage1, outcome)
		svc.Restart()
		kubeletCleanup(t, c, base)
		chaosConverged(t, env, svc, baseBlobs, round)
	}
}

// chaosLifecycle runs a sandbox and a container through their whole life.
func chaosLifecycle(ctx context.Context, c *criClient, image string, round int) string {
	pc := podConfig(fmt.Sprintf("chaos-%d", round), "")
	pc.LogDirectory = ""
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	if err != nil {
		return "RunPodSandbox: " + err.Error()
	}
	cc := containerConfig("app", image, "sleep", "1000")
	cc.LogPath = ""
	cr, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, Config: cc, SandboxConfig: pc})
	if err != nil {
		return "CreateContainer: " + err.Error()
	}
	steps := []func() error{
		func() error {
			_, err := c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cr.ContainerId})
			return err
		},
		func() error {
			_, err := c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: cr.ContainerId, Timeout: 1})
			return err
		},
		func() error {
			_, err := c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: cr.ContainerId})
			return err
		},
		func() error {
			_, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: rp.PodSandboxId})
			return err
		},
		func() error {
			_, err := c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: rp.PodSandboxId})
			return err
		},
	}
	for i, s := range steps {
		if err := s(); err != nil {
			return fmt.Sprintf("step %d: %v", i, err)
		}
	}
	return "completed"
}

// killAStage1 SIGKILLs the supervisor of one running pod of dataDir, if any.
func killAStage1(t *testing.T, dataDir string) {
	pids, _ := filepath.Glob(filepath.Join(dataDir, "pods", "run", "*", "stage1.pid"))
	for _, p := range pids {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			syscall.Kill(pid, syscall.SIGKILL)
			return
		}
	}
}

// kubeletCleanup does what a kubelet does with pods and images it no
// longer wants: stop and remove every sandbox listed (retrying while the
// service comes back), and remove the images it pulled besides keep.
func kubeletCleanup(t *testing.T, c *criClient, keep string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := tryKubeletCleanup(c, keep)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubelet-style cleanup did not succeed in 30s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tryKubeletCleanup(c *criClient, keep string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return err
	}
	for _, p := range l.Items {
		if _, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			return fmt.Errorf("StopPodSandbox %s: %w", p.Id, err)
		}
		if _, err := c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			return fmt.Errorf("RemovePodSandbox %s: %w", p.Id, err)
		}
	}
	imgs, err := c.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return err
	}
	for _, img := range imgs.Images {
		if strings.Contains(strings.Join(img.RepoTags, " "), strings.TrimPrefix(keep, "docker://")) {
			continue
		}
		if _, err := c.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: img.Id}}); err != nil {
			return fmt.Errorf("RemoveImage %s: %w", img.Id, err)
		}
	}
	return nil
}

// chaosConverged waits until nothing is left but the base image: no pod
// directory, no leak of any pod seen, no blob beyond the base image's, no
// layer tree unreferenced, no temporary file.
func chaosConverged(t *testing.T, env *testutil.Env, svc *criService, baseBlobs, round int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var left []string
		pods, _ := filepath.Glob(filepath.Join(env.DataDir, "pods", "*", "*"))
		left = append(left, pods...)
		for _, l := range testutil.FindLeaks(env.DataDir, env.SeenPods()) {
			if l.PID() != svc.cmd.Process.Pid {
				left = append(left, l.String())
			}
		}
		if blobs := dirEntries(t, casDir(env.DataDir, "blobs", "sha256")); len(blobs) != baseBlobs {
			left = append(left, fmt.Sprintf("%d blobs, the base image has %d", len(blobs), baseBlobs))
		}
		if veths, _ := exec.Command("ip", "-o", "link", "show", "master", svc.bridge(t)).Output(); len(veths) > 0 {
			left = append(left, "veths on the pod bridge: "+string(veths))
		}
		if tmp := dirEntries(t, casDir(env.DataDir, "tmp")); len(tmp) > 0 {
			left = append(left, "temporary files: "+strings.Join(tmp, " "))
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("round %d: not converged 30s after the cleanup:\n  %s", round, strings.Join(left, "\n  "))
		}
		time.Sleep(250 * time.Millisecond)
	}
}
