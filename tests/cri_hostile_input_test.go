package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// mountTmpfs mounts a tmpfs on a new directory with the given propagation
// and options; unmounted at cleanup.
func mountTmpfs(t *testing.T, propagation, opts string) string {
	t.Helper()
	dir := t.TempDir()
	must(t, "mount tmpfs", syscall.Mount("tmpfs", dir, "tmpfs", 0, opts))
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	flag := map[string]uintptr{"private": syscall.MS_PRIVATE, "shared": syscall.MS_SHARED}[propagation]
	must(t, "set propagation of "+dir, syscall.Mount("", dir, "", flag, ""))
	return dir
}

// TestCRIHostileInput sends malformed CRI requests: each is refused with
// the right code and a message naming the field, refusals have no side
// effect (no directory created relative to the service's working
// directory, no file outside the log directory) and the service stays up
// and leaks nothing (NewEnv's leak check).
func TestCRIHostileInput(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	ref, _ := pullTestImage(t, c)
	// two levels under a directory of the test's own: the escaping log
	// path's target (../../x) is in it, not in the shared /tmp
	logDir := filepath.Join(podLogDir(t, c), "a", "b")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := rpcCtx(t)
	pc := podConfig("hostile", logDir)
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	sb := rp.PodSandboxId
	private := mountTmpfs(t, "private", "size=1m")
	shared := mountTmpfs(t, "shared", "size=1m")
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", svc.cmd.Process.Pid))
	must(t, "service cwd", err)
	relHost := fmt.Sprintf("rkt-hostile-%d/made", time.Now().UnixNano())
	fifo := filepath.Join(t.TempDir(), "profile.json")
	must(t, "mkfifo", syscall.Mkfifo(fifo, 0o600))

	n := 0 // a name per case, so that an accepted case does not fail the next with AlreadyExists
	pod := func(edit func(*runtimeapi.PodSandboxConfig)) func() error {
		return func() error {
			n++
			cfg := proto.Clone(podConfig(fmt.Sprintf("bad-pod-%d", n), logDir)).(*runtimeapi.PodSandboxConfig)
			edit(cfg)
			_, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
			return err
		}
	}
	ctr := func(edit func(*runtimeapi.ContainerConfig)) func() error {
		return func() error {
			n++
			cfg := containerConfig(fmt.Sprintf("bad-ctr-%d", n), ref, "sleep", "1000")
			edit(cfg)
			_, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: cfg, SandboxConfig: pc})
			return err
		}
	}
	mount := func(m *runtimeapi.Mount) func(*runtimeapi.ContainerConfig) {
		return func(cfg *runtimeapi.ContainerConfig) { cfg.Mounts = []*runtimeapi.Mount{m} }
	}
	res := func(edit func(*runtimeapi.LinuxContainerResources)) func(*runtimeapi.ContainerConfig) {
		return func(cfg *runtimeapi.ContainerConfig) {
			cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{}
			edit(cfg.Linux.Resources)
		}
	}
	huge := map[string]string{"big": strings.Repeat("x", 2<<20)}
	tests := []struct {
		name  string
		call  func() error
		code  codes.Code
		field string // the message names it
	}{
		{"sandbox without config", func() error { _, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{}); return err },
			codes.InvalidArgument, "metadata.name"},
		{"sandbox with empty name", pod(func(p *runtimeapi.PodSandboxConfig) { p.Metadata.Name = "" }), codes.InvalidArgument, "metadata.name"},
		{"relative log directory", pod(func(p *runtimeapi.PodSandboxConfig) { p.LogDirectory = "logs" }), codes.InvalidArgument, "log_directory"},
		{"host sysctl", pod(func(p *runtimeapi.PodSandboxConfig) {
			p.Linux.Sysctls = map[string]string{"kernel.core_pattern": "|/x"}
		}),
			codes.InvalidArgument, "sysctls"},
		{"sysctl path", pod(func(p *runtimeapi.PodSandboxConfig) {
			p.Linux.Sysctls = map[string]string{"net.ipv4/../../../kernel/core_pattern": "x"}
		}), codes.InvalidArgument, "sysctls"},
		{"net sysctl on host network", pod(func(p *runtimeapi.PodSandboxConfig) {
			p.Linux.Sysctls = map[string]string{"net.ipv4.ip_forward": "1"}
			p.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}
		}), codes.InvalidArgument, "sysctls"},
		{"negative pod resources", pod(func(p *runtimeapi.PodSandboxConfig) {
			p.Linux.Resources = &runtimeapi.LinuxContainerResources{CpuShares: -2}
		}), codes.InvalidArgument, "cpu_shares"},
		{"huge pod annotations", pod(func(p *runtimeapi.PodSandboxConfig) { p.Annotations = huge }), codes.InvalidArgument, "annotations"},
		{"bad port", pod(func(p *runtimeapi.PodSandboxConfig) {
			p.PortMappings = []*runtimeapi.PortMapping{{HostPort: 70000, ContainerPort: 80}}
		}), codes.InvalidArgument, "port_mappings"},
		{"bad dns", pod(func(p *runtimeapi.PodSandboxConfig) {
			p.DnsConfig = &runtimeapi.DNSConfig{Searches: []string{"a\nnameserver 6.6.6.6"}}
		}), codes.InvalidArgument, "dns_config"},
		{"cgroup parent escape", pod(func(p *runtimeapi.PodSandboxConfig) { p.Linux.CgroupParent = "/../../x" }), codes.InvalidArgument, "cgroup_parent"},
		{"long hostname", pod(func(p *runtimeapi.PodSandboxConfig) { p.Hostname = strings.Repeat("h", 100) }), codes.InvalidArgument, "hostname"},

		{"container without config", func() error {
			_, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb})
			return err
		}, codes.InvalidArgument, "metadata.name"},
		{"container with empty name", ctr(func(cfg *runtimeapi.ContainerConfig) { cfg.Metadata.Name = "" }), codes.InvalidArgument, "metadata.name"},
		{"no image", ctr(func(cfg *runtimeapi.ContainerConfig) { cfg.Image = nil }), codes.InvalidArgument, "image"},
		{"unknown sandbox", func() error {
			_, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: "0123abcd-0000-4000-8000-000000000000", Config: containerConfig("x", ref)})
			return err
		}, codes.NotFound, "sandbox"},
		{"invalid sandbox ID", func() error {
			_, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: "../../x", Config: containerConfig("x", ref)})
			return err
		}, codes.NotFound, "sandbox"},
		{"escaping log path", ctr(func(cfg *runtimeapi.ContainerConfig) { cfg.LogPath = "../../x" }), codes.InvalidArgument, "log_path"},
		{"absolute log path", ctr(func(cfg *runtimeapi.ContainerConfig) { cfg.LogPath = filepath.Join(t.TempDir(), "x.log") }),
			codes.InvalidArgument, "log_path"},
		{"relative host path", ctr(mount(&runtimeapi.Mount{ContainerPath: "/m", HostPath: relHost})), codes.InvalidArgument, "mounts[0].host_path"},
		{"relative container path", ctr(mount(&runtimeapi.Mount{ContainerPath: "m", HostPath: shared})), codes.InvalidArgument, "mounts[0].container_path"},
		{"bidirectional on a private mount", ctr(mount(&runtimeapi.Mount{ContainerPath: "/m", HostPath: private,
			Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL})), codes.FailedPrecondition, "mounts[0]"},
		{"host-to-container on a private mount", ctr(mount(&runtimeapi.Mount{ContainerPath: "/m", HostPath: filepath.Join(private, "new"),
			Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER})), codes.FailedPrecondition, "mounts[0]"},
		{"bad image ref", ctr(func(cfg *runtimeapi.ContainerConfig) { cfg.Image.Image = "UPPER/Case::bad" }), codes.InvalidArgument, "UPPER/Case::bad"},
		{"missing image", ctr(func(cfg *runtimeapi.ContainerConfig) { cfg.Image.Image = "rkt-test/none:1" }), codes.NotFound, "rkt-test/none:1"},
		{"negative memory", ctr(res(func(r *runtimeapi.LinuxContainerResources) { r.MemoryLimitInBytes = -5 })), codes.InvalidArgument, "memory_limit_in_bytes"},
		{"oom score", ctr(res(func(r *runtimeapi.LinuxContainerResources) { r.OomScoreAdj = 5000 })), codes.InvalidArgument, "oom_score_adj"},
		{"env key", ctr(func(cfg *runtimeapi.ContainerConfig) {
			cfg.Envs = []*runtimeapi.KeyValue{{Key: "A=B", Value: []byte("c")}}
		}),
			codes.InvalidArgument, "envs[0]"},
		{"NUL in command", ctr(func(cfg *runtimeapi.ContainerConfig) { cfg.Command = []string{"sh\x00"} }), codes.InvalidArgument, "command[0]"},
		{"huge container annotations", ctr(func(cfg *runtimeapi.ContainerConfig) { cfg.Annotations = huge }), codes.InvalidArgument, "annotations"},
		{"relative working dir", ctr(func(cfg *runtimeapi.ContainerConfig) { cfg.WorkingDir = "tmp" }), codes.InvalidArgument, "working_dir"},
		{"bad device", ctr(func(cfg *runtimeapi.ContainerConfig) {
			cfg.Devices = []*runtimeapi.Device{{HostPath: "/dev/null", ContainerPath: "/dev/x", Permissions: "rwx"}}
		}), codes.InvalidArgument, "devices[0].permissions"},
		{"missing device", ctr(func(cfg *runtimeapi.ContainerConfig) {
			cfg.Devices = []*runtimeapi.Device{{HostPath: "/dev/rkt-test-none", ContainerPath: "/dev/x"}}
		}), codes.NotFound, "devices[0].host_path"},
		{"FIFO as seccomp profile", ctr(func(cfg *runtimeapi.ContainerConfig) {
			cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{
				ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: fifo}}
		}), codes.InvalidArgument, "localhost seccomp profile"},

		{"pull of a host file", func() error {
			_, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "docker-archive:/etc/shadow"}})
			return err
		}, codes.InvalidArgument, "names a file of this host"},
		{"pull of a host directory", func() error {
			_, err := c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "oci:/"}})
			return err
		}, codes.InvalidArgument, "names a file of this host"},
		{"status of an empty ID", func() error {
			_, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{})
			return err
		}, codes.InvalidArgument, "container ID"},
		{"negative update", func() error {
			_, err := c.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: "x",
				Linux: &runtimeapi.LinuxContainerResources{CpuPeriod: -1}})
			return err
		}, codes.InvalidArgument, "cpu_period"},
		{"exec without command", func() error {
			_, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: "x"})
			return err
		}, codes.InvalidArgument, "command"},
	}
	for _, tc := range tests {
		err := tc.call()
		if code := status.Code(err); code != tc.code || !strings.Contains(status.Convert(err).Message(), tc.field) {
			t.Errorf("%s: %v (%v); want %v naming %q", tc.name, err, code, tc.code, tc.field)
		}
	}

	// No side effect of the refusals.
	if _, err := os.Lstat(filepath.Join(cwd, strings.Split(relHost, "/")[0])); err == nil {
		t.Errorf("a refused relative host_path was created in the service's working directory %s", cwd)
		os.RemoveAll(filepath.Join(cwd, strings.Split(relHost, "/")[0]))
	}
	if _, err := os.Lstat(filepath.Join(private, "new")); err == nil {
		t.Errorf("a refused mount's missing host_path was created")
	}
	if _, err := os.Lstat(filepath.Join(logDir, "../../x")); err == nil {
		t.Errorf("a refused log_path was created outside the log directory")
	}
	l, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	must(t, "ListContainers", err)
	if len(l.Containers) != 0 {
		t.Errorf("refused requests left %d containers", len(l.Containers))
	}
	ps, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	must(t, "ListPodSandbox", err)
	if len(ps.Items) != 1 {
		t.Errorf("refused requests left %d sandboxes, want the 1 good one", len(ps.Items))
	}

	// What is allowed still works: Bidirectional on a shared mount, a
	// log path with a harmless "..".
	cfg := containerConfig("shared", ref, "sleep", "1000")
	cfg.LogPath = "shared/../shared.log"
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/m", HostPath: filepath.Join(shared, "made"), Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL}}
	cc, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: cfg, SandboxConfig: pc})
	must(t, "CreateContainer with Bidirectional on a shared mount", err)
	st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: cc.ContainerId})
	must(t, "ContainerStatus", err)
	if want := filepath.Join(logDir, "shared.log"); st.Status.LogPath != want {
		t.Errorf("log path %q, want %q", st.Status.LogPath, want)
	}
	if _, err := c.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		t.Fatalf("the service stopped answering: %v", err)
	}
}

// TestCRIManyEnv creates a container with 100,000 environment entries: the
// call must stay linear in the request size.
func TestCRIManyEnv(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	ref, _ := pullTestImage(t, c)
	logDir := podLogDir(t, c)
	ctx := rpcCtx(t)
	pc := podConfig("manyenv", logDir)
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	cfg := containerConfig("manyenv", ref, "true")
	for i := 0; i < 100000; i++ {
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: fmt.Sprintf("E_%d", i), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	start := time.Now()
	cc, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, Config: cfg, SandboxConfig: pc})
	took := time.Since(start)
	must(t, "CreateContainer with 100k env entries", err)
	t.Logf("CreateContainer with 100k env entries took %v", took)
	if took > 5*time.Second {
		t.Errorf("CreateContainer with 100k env entries took %v, want < 5s (about 0.5s on a quiet 2-core machine)", took)
	}
	start = time.Now()
	_, err = c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: cc.ContainerId})
	must(t, "ContainerStatus", err)
	t.Logf("ContainerStatus took %v", time.Since(start))
}

// TestCRIMessageSizes sends a 12 MiB request (the kubelet sends up to 16
// MiB) and runs an ExecSync printing 50 MB: its reply is capped to fit the
// 16 MiB a client accepts and says it was truncated.
func TestCRIMessageSizes(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	ref, _ := pullTestImage(t, c)
	logDir := podLogDir(t, c)
	ctx := rpcCtx(t)
	big := map[string]string{"big": strings.Repeat("x", 12<<20)}
	if _, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: big}}); err != nil {
		t.Errorf("ListContainers with a 12 MiB request: %v", err)
	}
	_, ctrID := runPodWithContainer(t, c, "bigexec", ref, logDir)
	kubelet := grpc.MaxCallRecvMsgSize(16 << 20) // what the kubelet's CRI client accepts
	r, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ctrID, Cmd: []string{"sh", "-c", "head -c 50000000 /dev/zero; echo err >&2"}}, kubelet)
	if err != nil {
		t.Fatalf("ExecSync printing 50 MB: %v", err)
	}
	if n := len(r.Stdout) + len(r.Stderr); n > 16<<20 {
		t.Errorf("ExecSync returned %d bytes", n)
	}
	if !strings.Contains(string(r.Stderr), "[output truncated: ") || r.ExitCode != 0 {
		t.Errorf("ExecSync: exit code %d, %d bytes of stdout, stderr ends %q; want 0 and a truncation note", r.ExitCode, len(r.Stdout), tail(string(r.Stderr), 2))
	}
}

// TestCRINoSpace starts a container whose log directory is on a full
// filesystem: the error is ResourceExhausted, not Unknown.
func TestCRINoSpace(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	ref, _ := pullTestImage(t, c)
	ctx := rpcCtx(t)
	full := mountTmpfs(t, "private", "size=64k,nr_inodes=2")
	t.Cleanup(func() { removeAllPods(t, c) }) // before full is unmounted
	pc := podConfig("nospace", full)
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	cfg := containerConfig("nospace", ref, "sleep", "1000")
	cfg.LogPath = "a/b/c.log"
	cc, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, Config: cfg, SandboxConfig: pc})
	if err == nil {
		_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cc.ContainerId})
	}
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("container logging to a full filesystem: %v (%v), want ResourceExhausted", err, status.Code(err))
	}
}
