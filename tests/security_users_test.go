package tests

import (
	"context"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// The rkt group of the built binaries (configure's --with-socket-group
// default) and the two local users the tests act as.
const (
	rktGroup     = "rkt"
	outsiderUser = "rkt-test-outsider"
	memberUser   = "rkt-test-member"
)

// localUser is a real unprivileged account of this host.
type localUser struct {
	name     string
	uid, gid uint32
	groups   []uint32
}

// ensureLocalUsers creates (once per host) the rkt group, a user outside
// it and a user in it.
func ensureLocalUsers(t *testing.T) (outsider, member localUser) {
	t.Helper()
	if _, err := user.LookupGroup(rktGroup); err != nil {
		runHost(t, "groupadd", "--system", rktGroup)
	}
	for _, u := range []struct{ name, groups string }{{outsiderUser, ""}, {memberUser, rktGroup}} {
		if _, err := user.Lookup(u.name); err != nil {
			args := []string{"--system", "--no-create-home", "--home-dir=/nonexistent", "--shell=/usr/sbin/nologin"}
			if u.groups != "" {
				args = append(args, "--groups="+u.groups)
			}
			runHost(t, "useradd", append(args, u.name)...)
		}
	}
	return lookupLocalUser(t, outsiderUser), lookupLocalUser(t, memberUser)
}

func lookupLocalUser(t *testing.T, name string) localUser {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("user %s: %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	lu := localUser{name: name, uid: uint32(uid), gid: uint32(gid)}
	gids, err := u.GroupIds()
	if err != nil {
		t.Fatalf("groups of %s: %v", name, err)
	}
	for _, g := range gids {
		n, _ := strconv.Atoi(g)
		lu.groups = append(lu.groups, uint32(n))
	}
	return lu
}

func runHost(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// as runs name args as u and returns its combined output and error.
func (u localUser) run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/nonexistent", "LANG=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid, Groups: u.groups}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// publicCopy copies the rkt binary where any user may run it.
func publicCopy(t *testing.T, env *testutil.Env) string {
	t.Helper()
	dir := filepath.Join(env.Root, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "rkt")
	src, err := os.Open(testutil.RKTBin(t))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestLocalUsersAgainstLivePods runs a user outside the rkt group and a
// member of it against a live service and a live pod whose container
// planted a setuid-root copy of busybox in its /tmp and holds a secret in
// its environment (moby CVE-2021-41091's class).
func TestLocalUsersAgainstLivePods(t *testing.T) {
	requireRoot(t)
	outsider, member := ensureLocalUsers(t)
	env := testutil.NewEnv(t)
	// The test root is the host's business: let everyone reach the data dir,
	// so that only rkt's own modes keep the users out.
	if err := os.Chmod(env.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	rkt := publicCopy(t, env)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	t.Cleanup(func() { removeAllPods(t, c) })
	ref, _ := pullTestImage(t, c)
	logDir := filepath.Join(env.Root, "logs")

	ctx := rpcCtx(t)
	pc := podConfig("secrets", logDir)
	rp, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, "RunPodSandbox", err)
	cc := containerConfig("planter", ref, "sh", "-c", "cp /bin/busybox /tmp/x && chmod 4755 /tmp/x && echo planted && sleep 100000")
	cc.Envs = []*runtimeapi.KeyValue{{Key: "SECRET", Value: []byte("hunter2-secret")}}
	cr, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId, Config: cc, SandboxConfig: pc})
	must(t, "CreateContainer", err)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cr.ContainerId})
	must(t, "StartContainer", err)

	podDirs, _ := filepath.Glob(filepath.Join(env.DataDir, "pods", "run", "*"))
	if len(podDirs) != 1 {
		t.Fatalf("want one running pod dir, got %v", podDirs)
	}
	pod := podDirs[0]
	uuid := filepath.Base(pod)
	apps, _ := filepath.Glob(filepath.Join(pod, "apps", "*"))
	if len(apps) != 1 {
		t.Fatalf("want one app dir, got %v", apps)
	}
	app := apps[0]
	planted := filepath.Join(app, "fs", "rootfs", "tmp", "x")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, err := os.Stat(planted); err == nil && st.Mode()&os.ModeSetuid != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the container did not plant %s", planted)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Nothing of the pod, the store or the network state is readable,
	// listable or searchable from outside root and the rkt group; rootfs
	// and layers are root's only.
	secretFiles := []string{
		filepath.Join(pod, "pod"),
		filepath.Join(app, "config.json"),
		filepath.Join(app, "stage0.json"),
		filepath.Join(app, "status.json"),
		filepath.Join(pod, "stage1.log"),
		filepath.Join(env.DataDir, "cas", "db", "store.db"),
	}
	rootOnly := []string{
		filepath.Join(app, "fs", "rootfs", "etc", "passwd"),
		filepath.Join(app, "fs", "upper", "tmp", "x"),
	}
	listable := []string{
		env.DataDir, filepath.Join(env.DataDir, "pods", "run"), pod, app,
		filepath.Join(env.DataDir, "cas"), filepath.Join(env.DataDir, "cas", "blobs"),
		filepath.Join(env.DataDir, "cas", "tree"), filepath.Join(env.DataDir, "networks"),
	}
	for _, f := range append(secretFiles, rootOnly...) {
		if out, err := outsider.run("cat", f); err == nil {
			t.Errorf("outsider read %s:\n%.200s", f, out)
		}
	}
	for _, d := range listable {
		if out, err := outsider.run("ls", d); err == nil {
			t.Errorf("outsider listed %s:\n%.200s", d, out)
		}
	}
	if out, err := outsider.run(planted, "id", "-u"); err == nil {
		t.Fatalf("outsider ran the container's setuid binary: %s", out)
	}
	if out, err := outsider.run(rkt, append(env.GlobalArgs(), "list")...); err == nil {
		t.Errorf("outsider could list pods:\n%s", out)
	}

	// A member reads rkt's state through the CLI, but not the rootfs, and
	// cannot change anything.
	for _, f := range rootOnly {
		if out, err := member.run("cat", f); err == nil {
			t.Errorf("member read root-only %s:\n%.200s", f, out)
		}
	}
	if out, err := member.run(planted, "id", "-u"); err == nil {
		t.Fatalf("member ran the container's setuid binary: %s", out)
	}
	for _, args := range [][]string{
		{"list"}, {"status", uuid}, {"cat-manifest", uuid}, {"image", "list"}, {"app", "list", uuid},
	} {
		out, err := member.run(rkt, append(env.GlobalArgs(), args...)...)
		if err != nil {
			t.Errorf("member: rkt %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if args[0] == "list" && !strings.Contains(out, uuid[:8]) {
			t.Errorf("member: rkt list does not show pod %s:\n%s", uuid, out)
		}
	}
	for _, args := range [][]string{
		{"stop", uuid}, {"rm", uuid}, {"gc"}, {"image", "gc"}, {"image", "rm", ref}, {"fetch", ref},
	} {
		out, err := member.run(rkt, append(env.GlobalArgs(), args...)...)
		if err == nil || !strings.Contains(out, "must be run as root") {
			t.Errorf("member: rkt %s was not refused with a clear message (err %v):\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Still running and intact after all that.
	st, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: cr.ContainerId})
	must(t, "ContainerStatus", err)
	if st.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("container state %v after the users' attempts", st.Status.State)
	}
}
