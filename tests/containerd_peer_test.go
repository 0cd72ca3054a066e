package tests

import (
	"archive/tar"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// containerdDist is a containerd the benchmarks measure the kubelet-service
// against: Debian's (1.6, with runc), or 2.4.2 built by
// .ci/install-bench-deps, with crun.
type containerdDist struct {
	name    string // the peer's name in the benchmarks' tables
	bin     string // the daemon
	shim    string // its containerd-shim-runc-v2 ("": the one on $PATH)
	runtime string // the OCI runtime its shim runs ("": runc)
	// specVersion, when set, is the OCI spec version written in the
	// bundles' config.json before runtime sees them (ociRuntimeWrapper)
	specVersion string
	// hybridless: runtime refuses cgroup v1 with a cgroup2 hierarchy that
	// has controllers (crun 1.8.1; hugetlb is there on this host): the
	// daemon then runs in a mount namespace without the cgroup2 mount
	hybridless bool
	v3         bool // config version 3 (containerd 2.x)
}

// containerd2Version is the containerd .ci/install-bench-deps builds into
// the tools directory.
const containerd2Version = "v2.4.2"

// debianContainerd is Debian's containerd with runc.
func debianContainerd() containerdDist { return containerdDist{name: "containerd", bin: "containerd"} }

// containerd2 is containerd 2.4.2 with crun; ok is false when either is
// not installed.
func containerd2() (d containerdDist, ok bool) {
	dir := filepath.Join(testutil.ToolsDir(), "containerd-"+containerd2Version)
	if testutil.ToolsDir() == "" {
		root, err := filepath.Abs("..")
		if err != nil {
			return d, false
		}
		dir = filepath.Join(root, "build", "tools", "containerd-"+containerd2Version)
	}
	crun, err := exec.LookPath("crun")
	if err != nil {
		return d, false
	}
	d = containerdDist{name: "containerd2", bin: filepath.Join(dir, "containerd"),
		shim: filepath.Join(dir, "containerd-shim-runc-v2"), runtime: crun, specVersion: "1.1.0",
		hybridless: true, v3: true}
	if _, err := os.Stat(d.shim); err != nil {
		return d, false
	}
	return d, d.version() != ""
}

// version describes the daemon and its OCI runtime ("containerd 1.6.20~ds1
// + runc 1.1.5+ds1"), or is "" when the daemon is not installed.
func (d containerdDist) version() string {
	out, err := exec.Command(d.bin, "--version").Output()
	if err != nil {
		return ""
	}
	f := strings.Fields(string(out)) // containerd <module> <version> [<revision>]
	if len(f) < 3 {
		return ""
	}
	runtime := d.runtime
	if runtime == "" {
		runtime = "runc"
	}
	rf := []string{filepath.Base(runtime), "?", "?"}
	if out, err := exec.Command(runtime, "--version").Output(); err == nil {
		rf = strings.Fields(strings.SplitN(string(out), "\n", 2)[0]) // <name> version <version>
	}
	if len(rf) < 3 {
		return ""
	}
	return fmt.Sprintf("containerd %s + %s %s", f[2], rf[0], rf[2])
}

// containerdVersion returns the version of Debian's containerd, or ""
// when it is not installed (.ci/install-bench-deps installs it).
func containerdVersion() string { return debianContainerd().version() }

// containerdPeer is a running containerd: its own root, state and socket in
// a temporary directory, the same CNI plugins and network config as the
// service's pods (on another bridge), the same loopback registry.
type containerdPeer struct {
	Socket       string
	cgroupParent string // for its pods, removed at cleanup
	cmd          *exec.Cmd
	dir          string
	done         chan struct{}
}

// startContainerdDist starts d with a CRI plugin whose sandbox image is
// pauseRef and which pulls from the registry at regAddr over plain HTTP;
// it is stopped, and what its pods left is removed, at cleanup.
func startContainerdDist(t testing.TB, d containerdDist, regAddr, pauseRef string) *containerdPeer {
	t.Helper()
	dir, err := os.MkdirTemp("", "rkt-peer-"+d.name+"-")
	if err != nil {
		t.Fatal(err)
	}
	p := &containerdPeer{dir: dir, Socket: filepath.Join(dir, "containerd.sock"), done: make(chan struct{}),
		cgroupParent: "/" + filepath.Base(dir)}
	netDir := filepath.Join(dir, "net.d")
	writeCRINetwork(t, netDir)
	hostsDir := filepath.Join(dir, "certs.d")
	hosts := fmt.Sprintf("server = %[1]q\n[host.%[1]q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+regAddr)
	if err := os.MkdirAll(filepath.Join(hostsDir, regAddr), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hostsDir, regAddr, "hosts.toml"), []byte(hosts), 0o600); err != nil {
		t.Fatal(err)
	}
	if d.specVersion != "" {
		d.runtime = ociRuntimeWrapper(t, dir, d.runtime, d.specVersion)
	}
	conf := containerdConfig(d, dir, p.Socket, pauseRef, netDir, hostsDir)
	confPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(d.bin, "--config", confPath)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if d.hybridless && cgroup2HasControllers() {
		// a private copy of the mounts (Go makes them private), less
		// cgroup2; the shell execs the daemon in the same process
		p.cmd = exec.Command("sh", "-c", `umount `+cgroup2Mount+` && exec "$0" "$@"`, d.bin, "--config", confPath)
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Unshareflags: syscall.CLONE_NEWNS}
	}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("cannot start %s: %v", d.bin, err)
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
			t.Fatalf("%s exited at start:\n%s", d.name, tail(string(b), 30))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s within 30s", d.name, p.Socket)
		}
	}
}

// cgroup2Mount is where a cgroup v1 host mounts cgroup2 (hybrid mode).
const cgroup2Mount = "/sys/fs/cgroup/unified"

// cgroup2HasControllers tells whether the host is in hybrid mode with
// controllers in its cgroup2 hierarchy.
func cgroup2HasControllers() bool {
	b, err := os.ReadFile(filepath.Join(cgroup2Mount, "cgroup.controllers"))
	return err == nil && strings.TrimSpace(string(b)) != ""
}

// ociRuntimeWrapper builds testdata/ociversion.c into dir: a program that
// sets the ociVersion of the bundle it is given (create --bundle) to
// version and executes runtime. crun 1.8.1 (Debian 12) accepts the OCI
// runtime spec 1.0 and 1.1 only, containerd 2.4.2 writes 1.3.0 ("unknown
// version specified"). It costs an exec of a static binary per call of
// the runtime (under a millisecond).
func ociRuntimeWrapper(t testing.TB, dir, runtime, version string) string {
	path := filepath.Join(dir, filepath.Base(runtime)+"-oci"+version)
	out, err := exec.Command("cc", "-O2", "-static", "-o", path, "-DRUNTIME="+strconv.Quote(runtime),
		"-DOCI_VERSION="+strconv.Quote(version), "testdata/ociversion.c").CombinedOutput()
	if err != nil {
		t.Fatalf("cannot build the OCI version wrapper of %s: %v\n%s", runtime, err, out)
	}
	return path
}

// containerdConfig is d's config.toml: root, state and sockets under dir,
// the CRI plugin's sandbox image, CNI and registry hosts directories.
// restrict_oom_score_adj: root here lacks CAP_SYS_RESOURCE, and the OCI
// runtime fails to lower the sandbox's oom_score_adj without it. NRI (2.x)
// is off: its socket is machine-wide, and nothing here uses it.
func containerdConfig(d containerdDist, dir, socket, pauseRef, netDir, hostsDir string) string {
	version, images, runtime := 2, `"io.containerd.grpc.v1.cri"`, `"io.containerd.grpc.v1.cri"`
	if d.v3 {
		version, images, runtime = 3, `"io.containerd.cri.v1.images"`, `"io.containerd.cri.v1.runtime"`
	}
	c := fmt.Sprintf(`version = %d
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.nri.v1.nri"]
[grpc]
  address = %q
[ttrpc]
  address = %q
[debug]
  level = "warn"
[plugins."io.containerd.internal.v1.opt"]
  path = %q
[plugins.%s.registry]
  config_path = %q
[plugins.%s]
  restrict_oom_score_adj = true
`, version, filepath.Join(dir, "root"), filepath.Join(dir, "state"), socket, socket+".ttrpc",
		filepath.Join(dir, "opt"), images, hostsDir, runtime)
	if d.v3 {
		c += fmt.Sprintf(`[plugins.%s.pinned_images]
  sandbox = %q
[plugins.%s.cni]
  bin_dirs = ["/usr/lib/cni"]
  conf_dir = %q
`, images, pauseRef, runtime, netDir)
	} else {
		c += fmt.Sprintf(`  sandbox_image = %q
[plugins.%s.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = %q
`, pauseRef, runtime, netDir)
	}
	if d.shim != "" || d.runtime != "" {
		c += fmt.Sprintf(`[plugins.%[1]s.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  runtime_path = %[2]q
[plugins.%[1]s.containerd.runtimes.runc.options]
  BinaryName = %[3]q
`, runtime, d.shim, d.runtime)
	}
	return c
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
