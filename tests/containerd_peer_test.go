package tests

import (
	"archive/tar"
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

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// containerdPeer is Debian's containerd (with runc), the peer the benchmarks
// measure the kubelet-service against: its own root, state and socket in a
// temporary directory, the same CNI plugins and network config as the
// service's pods (on another bridge), the same loopback registry.
type containerdPeer struct {
	Socket       string
	cgroupParent string // for its pods, removed at cleanup
	cmd          *exec.Cmd
	dir          string
	done         chan struct{}
}

// containerdVersion returns the version of the installed containerd, or ""
// when it is not installed (.ci/install-bench-deps installs it).
func containerdVersion() string {
	out, err := exec.Command("containerd", "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// startContainerd starts containerd with a CRI plugin whose sandbox image
// is pauseRef and whose registry mirror for the registry at regAddr is plain
// HTTP; it is stopped, and what its pods left is removed, at cleanup.
func startContainerd(t testing.TB, regAddr, pauseRef string) *containerdPeer {
	t.Helper()
	dir, err := os.MkdirTemp("", "rkt-peer-containerd-")
	if err != nil {
		t.Fatal(err)
	}
	p := &containerdPeer{dir: dir, Socket: filepath.Join(dir, "containerd.sock"), done: make(chan struct{}),
		cgroupParent: "/" + filepath.Base(dir)}
	netDir := filepath.Join(dir, "net.d")
	writeCRINetwork(t, netDir)
	// restrict_oom_score_adj: root here lacks CAP_SYS_RESOURCE, and runc
	// fails to lower the sandbox's oom_score_adj without it.
	conf := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[debug]
  level = "warn"
[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q
[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true
  sandbox_image = %[6]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[7]q
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors.%[8]q]
    endpoint = [%[9]q]
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), p.Socket, p.Socket+".ttrpc",
		filepath.Join(dir, "opt"), pauseRef, netDir, regAddr, "http://"+regAddr)
	confPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command("containerd", "--config", confPath)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("cannot start containerd: %v", err)
	}
	logf.Close()
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.stop)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("unix", p.Socket); err == nil {
			c.Close()
			return p
		}
		select {
		case <-p.done:
			b, _ := os.ReadFile(filepath.Join(dir, "containerd.log"))
			t.Fatalf("containerd exited at start:\n%s", tail(string(b), 30))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("containerd did not listen on %s within 30s", p.Socket)
		}
	}
}

// Pid is containerd's own process.
func (p *containerdPeer) Pid() int { return p.cmd.Process.Pid }

// client connects a CRI client to containerd.
func (p *containerdPeer) client(t testing.TB) *criClient {
	return dialCRI(t, &criService{Socket: p.Socket})
}

// stop removes every pod (so that the shims exit and CNI releases the
// addresses), stops containerd and unmounts and deletes its directories.
func (p *containerdPeer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := dialCRI(nopTB{}, &criService{Socket: p.Socket})
	if l, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{}); err == nil {
		for _, s := range l.Items {
			c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.Id})
			c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.Id})
		}
	}
	c.conn.Close()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	if mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(p.dir)); err == nil {
		for i := len(mounts) - 1; i >= 0; i-- {
			unix.Unmount(mounts[i].Mountpoint, unix.MNT_DETACH)
		}
	}
	os.RemoveAll(p.dir)
	removeCgroupParent(p.cgroupParent)
}

// nopTB lets cleanup code dial without a test to fail.
type nopTB struct{ testing.TB }

func (nopTB) Helper()               {}
func (nopTB) Cleanup(func())        {}
func (nopTB) Fatalf(string, ...any) {}

// peerBusyboxLayer is the busybox layer with the file's mode in the
// headers of its hard links too: containerd applies a link header's mode
// to the file (0644 would make busybox not executable), rkt ignores it.
func peerBusyboxLayer(t testing.TB) v1.Layer {
	entries := testutil.BusyboxEntries(t)
	for i := range entries {
		if entries[i].Type == tar.TypeLink {
			entries[i].Mode = 0o755
		}
	}
	return testutil.Layer(t, entries...)
}

// pushPeerImages pushes the benchmark's busybox and the peer's sandbox
// image (busybox sleeping forever: like pause, it only holds the
// namespaces) and returns their references.
func pushPeerImages(t testing.TB, reg *testutil.Registry) (string, string) {
	l := peerBusyboxLayer(t)
	img := testutil.Image(t, testutil.ImageConfig{Cmd: []string{"sh"}}, l)
	pause := testutil.Image(t, testutil.ImageConfig{Entrypoint: []string{"/bin/sleep", "2147483647"}}, l)
	return reg.Push(t, "rkt-test/busybox:1", img), reg.Push(t, "rkt-test/pause:1", pause)
}
