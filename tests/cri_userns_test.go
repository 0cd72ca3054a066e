package tests

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIUserNamespace runs a pod in its own user namespace (uid/gid
// 0:200000:65536) and checks, from inside a container: the mapping, that
// the image's and a host volume's root-owned files belong to the app's
// root (idmapped mounts), that the app's root can write its rootfs and
// volume and what that leaves on the host, and that a second container and
// exec share the namespace. Invalid modes answer InvalidArgument.
func TestCRIUserNamespace(t *testing.T) { testCRIUserNamespace(t, startCRIService) }

// TestCRIUserNamespacePrivateMounts is TestCRIUserNamespace with the
// service in a new private mount namespace at each start: once restarted,
// it adds a container to a pod whose supervisor and user namespace are in
// the mount namespace of its first start.
func TestCRIUserNamespacePrivateMounts(t *testing.T) {
	testCRIUserNamespace(t, startCRIServicePrivateMounts)
}

func testCRIUserNamespace(t *testing.T, startService func(testing.TB, *testutil.Env, ...string) *criService) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	// The apps' init must search every directory above their rootfs.
	must(t, "chmod data root", os.Chmod(env.Root, 0o711))
	svc := startService(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	t.Cleanup(func() { removeAllPods(t, c) })
	ctx := rpcCtx(t)

	const hostID = 200000
	mapping := []*runtimeapi.IDMapping{{ContainerId: 0, HostId: hostID, Length: 65536}}
	userns := &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: mapping, Gids: mapping}
	nsOpts := &runtimeapi.NamespaceOption{UsernsOptions: userns}

	for name, u := range map[string]*runtimeapi.UserNamespace{
		"container mode": {Mode: runtimeapi.NamespaceMode_CONTAINER},
		"root unmapped": {Mode: runtimeapi.NamespaceMode_POD,
			Uids: []*runtimeapi.IDMapping{{ContainerId: 1, HostId: hostID, Length: 10}}, Gids: mapping},
	} {
		pc := podConfig("userns-bad", "")
		pc.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{UsernsOptions: u}}
		_, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("RunPodSandbox with user namespace %s: %v, want InvalidArgument", name, err)
		}
	}

	rs, err := c.Status(ctx, &runtimeapi.StatusRequest{})
	must(t, "Status", err)
	if len(rs.RuntimeHandlers) == 0 || !rs.RuntimeHandlers[0].GetFeatures().GetUserNamespaces() {
		t.Errorf("Status does not report user namespaces on a host with idmapped mounts: %v", rs.RuntimeHandlers)
	}

	vol := filepath.Join(env.Root, "vol")
	must(t, "mkdir volume", os.Mkdir(vol, 0o755))
	must(t, "write volume file", os.WriteFile(filepath.Join(vol, "host-file"), []byte("x"), 0o644))

	pc := podConfig("userns", "")
	pc.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: nsOpts}
	pc.Linux.Sysctls = map[string]string{"kernel.shm_rmid_forced": "1", "net.ipv4.ip_unprivileged_port_start": "100"}
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox with a user namespace", err)
	start := func(name string) string {
		cc := containerConfig(name, imgID, "sleep", "100000")
		cc.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: nsOpts}
		cc.Mounts = []*runtimeapi.Mount{{ContainerPath: "/vol", HostPath: vol}}
		r, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, Config: cc, SandboxConfig: pc})
		must(t, "CreateContainer "+name, err)
		_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: r.ContainerId})
		must(t, "StartContainer "+name, err)
		return r.ContainerId
	}
	a, b := start("a"), start("b")
	run := func(ctr, script string) string {
		t.Helper()
		r, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ctr, Cmd: []string{"sh", "-c", script}, Timeout: 30})
		must(t, "ExecSync "+script, err)
		if r.ExitCode != 0 {
			t.Fatalf("%q exited %d: %s%s", script, r.ExitCode, r.Stdout, r.Stderr)
		}
		return strings.Join(strings.Fields(string(r.Stdout)), " ")
	}
	if got := run(a, "cat /proc/self/uid_map /proc/self/gid_map"); got != "0 200000 65536 0 200000 65536" {
		t.Errorf("uid_map gid_map in the container = %q, want 0 200000 65536 twice", got)
	}
	if got := run(a, "id -u; stat -c %u:%g /bin/busybox /etc /vol/host-file"); got != "0 0:0 0:0 0:0" {
		t.Errorf("ids in the container = %q, want root and root-owned image and volume files", got)
	}
	// Its UTS and IPC namespaces too: hostname and sysctls set there, its
	// own mqueue mounted.
	if got := run(a, "hostname; cat /proc/sys/kernel/shm_rmid_forced /proc/sys/net/ipv4/ip_unprivileged_port_start; grep -c ' /dev/mqueue mqueue ' /proc/mounts"); got != "userns 1 100 1" {
		t.Errorf("hostname, sysctls and mqueue in the container: %q, want \"userns 1 100 1\"", got)
	}
	// The pod's network namespace belongs to its user namespace: the app
	// has its own sysfs, listing only the pod's interfaces.
	sysNet := strings.Fields(run(a, "ls /sys/class/net"))
	procNet := run(a, "cat /proc/net/dev")
	if len(sysNet) < 2 {
		t.Errorf("/sys/class/net in the container: %v, want lo and the pod's interface", sysNet)
	}
	for _, n := range sysNet {
		if !strings.Contains(procNet, n+":") {
			t.Errorf("/sys/class/net in the container lists %s, not in its network namespace: %s", n, procNet)
		}
	}
	run(a, "echo hi > /etc/written && echo v > /vol/from-app")
	if got := run(b, "readlink /proc/self/ns/user"); got != run(a, "readlink /proc/self/ns/user") {
		t.Errorf("the pod's containers are in different user namespaces: %q", got)
	}
	// Through the idmapped volume the app's root writes as the host's root;
	// in its rootfs (upper directory, not idmapped) as the mapped host ID.
	var st syscallStat
	must(t, "stat volume file", statOwner(filepath.Join(vol, "from-app"), &st))
	if st.uid != 0 || st.gid != 0 {
		t.Errorf("a file the app's root wrote in an idmapped volume is %d:%d on the host, want 0:0", st.uid, st.gid)
	}
	if left, _ := filepath.Glob(filepath.Join(env.DataDir, "pods", "run", "*", "apps", "*", "idmap")); len(left) > 0 {
		t.Errorf("temporary idmapped layer mounts left behind: %v", left)
	}
	uppers, _ := filepath.Glob(filepath.Join(env.DataDir, "pods", "run", "*", "apps", "*", "fs", "upper", "etc", "written"))
	if len(uppers) != 1 {
		t.Fatalf("the file written in the rootfs is in %d upper directories, want 1: %v", len(uppers), uppers)
	}
	must(t, "stat upper file", statOwner(uppers[0], &st))
	if st.uid != hostID || st.gid != hostID {
		t.Errorf("a file the app's root wrote in its rootfs is %d:%d on the host, want %d:%d", st.uid, st.gid, hostID, hostID)
	}
	nsA := run(a, "readlink /proc/self/ns/user")
	if self, _ := os.Readlink("/proc/self/ns/user"); nsA == self {
		t.Errorf("the container is in the host's user namespace %s", self)
	}

	// A restarted service adds apps to the same user namespace.
	svc.Kill()
	svc.Restart()
	c3 := start("c")
	if got := run(c3, "cat /proc/self/uid_map; readlink /proc/self/ns/user"); got != "0 200000 65536 "+nsA {
		t.Errorf("a container created after a restart: %q, want the pod's mapping and namespace %s", got, nsA)
	}
}

// syscallStat is the owner of a file.
type syscallStat struct{ uid, gid uint32 }

func statOwner(path string, out *syscallStat) error {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return err
	}
	out.uid, out.gid = st.Uid, st.Gid
	return nil
}

// TestCRIUserNamespaceUnsupported: on a data directory whose filesystem
// has no idmapped mounts (overlayfs) the service reports no user namespace
// support and refuses POD user namespaces with FailedPrecondition.
func TestCRIUserNamespaceUnsupported(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	ovl := t.TempDir()
	for _, d := range []string{"lower", "upper", "work"} {
		must(t, "mkdir "+d, os.Mkdir(filepath.Join(ovl, d), 0o755))
	}
	must(t, "mount overlay", syscall.Mount("overlay", env.DataDir, "overlay", 0,
		"lowerdir="+ovl+"/lower,upperdir="+ovl+"/upper,workdir="+ovl+"/work"))
	t.Cleanup(func() { syscall.Unmount(env.DataDir, syscall.MNT_DETACH) })
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	ctx := rpcCtx(t)
	st, err := c.Status(ctx, &runtimeapi.StatusRequest{})
	must(t, "Status", err)
	if len(st.RuntimeHandlers) == 0 || st.RuntimeHandlers[0].GetFeatures().GetUserNamespaces() {
		t.Errorf("Status reports user namespaces on overlayfs: %v", st.RuntimeHandlers)
	}
	mapping := []*runtimeapi.IDMapping{{ContainerId: 0, HostId: 200000, Length: 65536}}
	pc := podConfig("userns-unsupported", "")
	pc.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{
		UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: mapping, Gids: mapping}}}
	if _, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("RunPodSandbox with a user namespace on overlayfs: %v, want FailedPrecondition", err)
	}
}

// TestUserNamespaceCLI: `rkt run --private-users` gives the pod the same
// user namespace as the CRI's POD mode (one implementation in stage0).
func TestUserNamespaceCLI(t *testing.T) {
	requireRoot(t)
	pe := newPodEnv(t)
	must(t, "chmod data root", os.Chmod(pe.Root, 0o711))
	r := pe.run("--net=none", "--private-users=0:300000:65536", pe.image, "--exec=/bin/sh", "--",
		"-c", "cat /proc/self/uid_map; stat -c %u:%g /bin/busybox; touch /new && echo wrote")
	if r.Code != 0 {
		t.Fatalf("rkt run --private-users: %s", r)
	}
	if got := strings.Join(strings.Fields(r.Stdout), " "); got != "0 300000 65536 0:0 wrote" {
		t.Errorf("app output %q, want the mapping, root-owned image files and a writable rootfs", got)
	}
	// A shared PID namespace is created inside the user namespace, so the
	// app may mount its /proc.
	r = pe.run("--net=none", "--shared-pid", "--private-users=0:300000:65536", pe.image, "--exec=/bin/sh", "--",
		"-c", "cat /proc/self/uid_map; cat /proc/1/cmdline | tr '\\0' ' '")
	if got := strings.Join(strings.Fields(r.Stdout), " "); r.Code != 0 || !strings.HasPrefix(got, "0 300000 65536 ") || !strings.Contains(got, "pidns") {
		t.Errorf("rkt run --shared-pid --private-users: %s; want the mapping and the pod's PID 1", r)
	}
	if r := pe.run("--net=none", "--private-users=1:300000:65536", pe.image, "--exec=/bin/true"); r.Code == 0 || !strings.Contains(r.Stderr, "container ID 0") {
		t.Errorf("rkt run with root unmapped: %s; want an error about container ID 0", r)
	}
}
