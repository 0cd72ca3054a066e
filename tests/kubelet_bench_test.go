package tests

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// containerd is a Debian containerd started by a test with its own root,
// state, socket, CNI network and registry hosts under dir.
type containerd struct {
	t        testing.TB
	dir      string
	Socket   string
	Endpoint string
	cmd      *exec.Cmd
	done     chan struct{}
}

// startContainerd starts containerd whose CRI pulls from the loopback
// registry regAddr over HTTP, with sandboxImage as its pause image; it is
// stopped with its shims, mounts and bridge at cleanup.
func startContainerd(t testing.TB, dir, regAddr, sandboxImage string) *containerd {
	t.Helper()
	bin, err := exec.LookPath("containerd")
	if err != nil {
		t.Skip("containerd is not installed (.ci/install-deps installs it)")
	}
	c := &containerd{t: t, dir: dir, Socket: filepath.Join(dir, "containerd.sock")}
	c.Endpoint = "unix://" + c.Socket
	netDir := filepath.Join(dir, "net.d")
	writeCRINetwork(t, netDir)
	hosts := filepath.Join(dir, "certs.d", regAddr)
	if err := os.MkdirAll(hosts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hosts, "hosts.toml"),
		[]byte(fmt.Sprintf("server = \"http://%s\"\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", regAddr, regAddr)), 0o644); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`version = 2
root = "%[1]s/root"
state = "%[1]s/state"
[grpc]
  address = "%[2]s"
[ttrpc]
  address = "%[2]s.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[3]s"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "%[4]s"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "%[1]s/certs.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
`, dir, c.Socket, sandboxImage, netDir)
	cfg := filepath.Join(dir, "containerd.toml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(bin, "--config", cfg)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("cannot start containerd: %v", err)
	}
	logf.Close()
	c.done = make(chan struct{})
	go func() { c.cmd.Wait(); close(c.done) }()
	t.Cleanup(c.stop)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if conn, err := net.Dial("unix", c.Socket); err == nil {
			conn.Close()
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("containerd did not listen on %s within 30s", c.Socket)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop stops containerd, then the shims it started (they outlive it), and
// unmounts what is left under its dir.
func (c *containerd) stop() {
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		args := strings.Split(string(b), "\x00")
		if len(args) > 0 && strings.HasSuffix(args[0], "containerd-shim-runc-v2") && strings.Contains(string(b), c.Socket) {
			var pid int
			fmt.Sscanf(p, "/proc/%d/cmdline", &pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mounts")
	var under []string
	for _, l := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(f[1], c.dir+"/") {
			under = append(under, f[1])
		}
	}
	for i := len(under) - 1; i >= 0; i-- {
		syscall.Unmount(under[i], syscall.MNT_DETACH)
	}
}

// staticPodToRunning writes n static pod manifests one after the other and
// returns, for each, the time from writing it until the runtime reports its
// container running (polled through the CRI).
func staticPodToRunning(b *testing.B, k *kubelet, c *criClient, image string, n int) []time.Duration {
	var ds []time.Duration
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("bench%d", i)
		manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: %s, command: [sh, -c, 'trap "exit 0" TERM; sleep 3600 & wait']}
`, name, image)
		path := filepath.Join(k.Manifests, name+".yaml")
		start := time.Now()
		if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
			b.Fatal(err)
		}
		k.waitFor(name+" running", time.Minute, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
				State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
				LabelSelector: map[string]string{"io.kubernetes.pod.name": name + "-" + k.NodeName}}})
			if err != nil {
				return err
			}
			if len(l.Containers) == 0 {
				return fmt.Errorf("no running container of %s", name)
			}
			return nil
		})
		ds = append(ds, time.Since(start))
		if err := os.Remove(path); err != nil {
			b.Fatal(err)
		}
	}
	return ds
}

// BenchmarkKubeletStaticPod times a standalone kubelet's static pods from
// manifest to running container (median of 10, image already pulled),
// against rkt kubelet-service and then Debian's containerd on the same
// host, and reports the ratio.
func BenchmarkKubeletStaticPod(b *testing.B) {
	requireRoot(b)
	const n = 10
	env := testutil.NewEnv(b)
	reg := testutil.StartRegistry(b)
	image := reg.Push(b, "bench/busybox:1", testutil.Busybox(b))
	pause := reg.Push(b, "bench/pause:1", testutil.BusyboxWith(b, testutil.ImageConfig{Entrypoint: []string{"sleep", "2147483647"}}))
	medians := map[string]time.Duration{}
	for _, rt := range []string{"rkt", "containerd"} {
		ok := b.Run(rt, func(b *testing.B) {
			var endpoint string
			if rt == "rkt" {
				endpoint = startCRIService(b, env).Endpoint
			} else {
				dir, err := os.MkdirTemp("", "rkt-bench-containerd-")
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { os.RemoveAll(dir) })
				endpoint = startContainerd(b, dir, reg.Addr, pause).Endpoint
			}
			c := dialCRIEndpoint(b, endpoint)
			b.Cleanup(func() { removeAllPods(b, c) })
			ctx := rpcCtx(b)
			for _, img := range []string{image, pause} {
				if _, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: img}}); err != nil {
					b.Fatalf("PullImage %s: %v", img, err)
				}
			}
			root, err := os.MkdirTemp("", "rkt-bench-kubelet-")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { os.RemoveAll(root) })
			k := startKubelet(b, endpoint, root)
			staticPodToRunning(b, k, c, image, 1) // warm-up
			ds := staticPodToRunning(b, k, c, image, n)
			medians[rt] = percentile(ds, 50)
			b.ReportMetric(ms(medians[rt]), "median-ms")
			fmt.Printf("BenchmarkKubeletStaticPod: %s manifest->running median %.0f ms (p90 %.0f ms, n=%d)\n",
				rt, ms(medians[rt]), ms(percentile(ds, 90)), n)
		})
		if !ok {
			return
		}
	}
	if medians["rkt"] > 0 && medians["containerd"] > 0 {
		ratio := float64(medians["rkt"]) / float64(medians["containerd"])
		b.ReportMetric(ratio, "rkt/containerd")
		fmt.Printf("BenchmarkKubeletStaticPod: rkt/containerd = %.2fx\n", ratio)
	}
}
