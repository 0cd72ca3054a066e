package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

// The integration tests build the stage1 binary, write pod directories by
// hand (what stage0 does) and drive the supervisor through control.Client.
// They need root and busybox.

var (
	buildOnce sync.Once
	stage1Bin string
	buildErr  error
	rootfsDir string
)

func needRoot(t testing.TB) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("busybox"); err != nil {
		t.Skip("needs busybox")
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if stage1Bin != "" {
		os.RemoveAll(filepath.Dir(stage1Bin))
	}
	if rootfsDir != "" {
		os.RemoveAll(rootfsDir)
	}
	os.Exit(code)
}

// stage1Binary builds stage1 once per test run.
func stage1Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stage1-bin")
		if err != nil {
			buildErr = err
			return
		}
		stage1Bin = filepath.Join(dir, "stage1")
		args := []string{"build", "-tags", "seccomp", "-o", stage1Bin}
		if os.Getenv("STAGE1_TEST_RACE") != "" {
			args = append(args, "-race") // the supervisor under the race detector
		}
		cmd := exec.Command("go", append(args, ".")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = err
			t.Logf("%s", out)
			return
		}
		rootfsDir, buildErr = makeRootfs()
	})
	if buildErr != nil {
		t.Fatalf("cannot build stage1 or rootfs: %v", buildErr)
	}
	return stage1Bin
}

// makeRootfs makes a busybox rootfs with applet hard links, shared by the
// tests' apps.
func makeRootfs() (string, error) {
	dir, err := os.MkdirTemp("", "stage1-rootfs")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	for _, d := range []string{"bin", "etc", "tmp", "proc", "sys", "dev"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return "", err
		}
	}
	bb, _ := exec.LookPath("busybox")
	data, err := os.ReadFile(bb)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "bin/busybox"), data, 0o755); err != nil {
		return "", err
	}
	out, err := exec.Command(bb, "--list").Output()
	if err != nil {
		return "", err
	}
	for _, name := range strings.Fields(string(out)) {
		if name != "busybox" {
			os.Link(filepath.Join(dir, "bin/busybox"), filepath.Join(dir, "bin", name))
		}
	}
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n",
		"etc/group":  "root:x:0:\nnogroup:x:65534:\n",
	}
	for p, c := range files {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// testPod is a pod directory and its supervisor.
type testPod struct {
	t        testing.TB
	dir      string
	manifest schema.PodManifest
	cmd      *exec.Cmd
	exited   chan struct{}
	client   *control.Client
	args     []string // more arguments of `stage1 run`
}

// testCgroupParent is this test process's: a pod's cleanup kills what is
// left under it, which must not be the pods of another test process.
var testCgroupParent = "/rkt-stage1-test-" + strconv.Itoa(os.Getpid())

func newPod(t testing.TB, edit func(*schema.PodManifest)) *testPod {
	t.Helper()
	return newPodIn(t, "", edit)
}

// newPodIn makes the pod directory under parent (default: the temp dir).
func newPodIn(t testing.TB, parent string, edit func(*schema.PodManifest)) *testPod {
	t.Helper()
	needRoot(t)
	stage1Binary(t)
	dir, err := os.MkdirTemp(parent, "pod")
	if err != nil {
		t.Fatal(err)
	}
	p := &testPod{t: t, dir: dir}
	p.manifest = schema.PodManifest{
		Version: schema.Version, UUID: randHex(16), Net: "host",
		CgroupParent: testCgroupParent, CreatedAt: time.Now(),
	}
	if edit != nil {
		edit(&p.manifest)
	}
	p.writeManifest()
	t.Cleanup(p.cleanup)
	return p
}

func (p *testPod) writeManifest() {
	b, err := json.Marshal(p.manifest)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(schema.PodDir(p.dir).Manifest(), b, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// addApp writes the app's files and adds it to the manifest.
func (p *testPod) addApp(name string, app schema.App, args []string, edit func(*specs.Spec)) {
	p.t.Helper()
	app.Name = name
	app.CreatedAt = time.Now()
	adir := string(schema.PodDir(p.dir).App(name))
	if err := os.MkdirAll(adir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	spec := specconv.Example()
	spec.Root = &specs.Root{Path: rootfsDir}
	spec.Hostname = ""
	spec.Process.Terminal = app.TTY
	spec.Process.Args = args
	spec.Process.Env = []string{"PATH=/bin", "HOME=/"}
	spec.Linux.CgroupsPath = podCgroupPath(&p.manifest) + "/" + name
	if edit != nil {
		edit(spec)
	}
	writeJSON(p.t, schema.AppDir(adir).Spec(), spec)
	p.manifest.Apps = append(p.manifest.Apps, app)
	p.writeManifest()
}

func writeJSON(t testing.TB, path string, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// start runs the supervisor as stage0 does and waits until it is ready.
func (p *testPod) start(mode string) error {
	p.t.Helper()
	lock, err := os.Open(p.dir)
	if err != nil {
		p.t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		p.t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		p.t.Fatal(err)
	}
	defer r.Close()
	logf, err := os.Create(schema.PodDir(p.dir).Stage1Log())
	if err != nil {
		p.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(stage1Bin, append([]string{"run", "--pod-dir=" + p.dir, "--mode=" + mode, "--debug"}, p.args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{lock, w}
	flags := uintptr(syscall.CLONE_NEWUTS)
	if !p.manifest.HostIPC {
		flags |= syscall.CLONE_NEWIPC
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Cloneflags: flags}
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	w.Close()
	p.cmd = cmd
	p.exited = make(chan struct{})
	go func() { cmd.Wait(); close(p.exited) }()
	if err := control.WaitReady(r); err != nil {
		<-p.exited
		return err
	}
	c, err := control.Dial(p.dir)
	if err != nil {
		p.t.Fatal(err)
	}
	p.client = c
	return nil
}

func (p *testPod) mustStart(mode string) {
	p.t.Helper()
	if err := p.start(mode); err != nil {
		p.t.Fatalf("stage1 did not start: %v\n%s", err, p.log())
	}
}

func (p *testPod) log() string {
	b, _ := os.ReadFile(schema.PodDir(p.dir).Stage1Log())
	return string(b)
}

// waitExit waits for the supervisor process to end.
func (p *testPod) waitExit(d time.Duration) {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(d):
		p.t.Fatalf("stage1 still running after %v\n%s", d, p.log())
	}
}

// cleanup kills the supervisor if needed, runs `stage1 gc` and checks that
// nothing is left: no cgroups, no runc state, no processes of the pod.
func (p *testPod) cleanup() {
	t := p.t
	if p.cmd != nil {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
	}
	if out, err := exec.Command(stage1Bin, "gc", "--pod-dir="+p.dir).CombinedOutput(); err != nil {
		t.Errorf("stage1 gc: %v: %s", err, out)
	}
	cg := podCgroupPath(&p.manifest)
	if cgroupExists(cg) {
		t.Errorf("pod cgroup %s left behind", cg)
		removePodCgroups(cg)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "runc")); err == nil {
		t.Error("runc state left behind")
	}
	if strings.Contains(p.log(), "DATA RACE") {
		t.Error("the race detector fired in stage1")
	}
	if t.Failed() {
		t.Logf("stage1.log:\n%s", p.log())
	}
	unix.Unmount(schema.PodDir(p.dir).NetNS(), unix.MNT_DETACH)
	os.RemoveAll(p.dir)
	removePodCgroups(p.manifest.CgroupParent)
}

// waitLog waits until the app's log has the entry "<stream> <tag> <line>".
func (p *testPod) waitLog(app, entry string) {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(schema.PodDir(p.dir).App(app).DefaultLog())
		if strings.Contains(string(b), " "+entry+"\n") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.t.Fatalf("app %s never logged %q", app, entry)
}

func (p *testPod) status(name string) schema.AppStatus {
	p.t.Helper()
	st, err := control.ReadAppStatus(p.dir, name)
	if err != nil {
		p.t.Fatal(err)
	}
	return *st
}

func (p *testPod) exec(app string, args ...string) (string, int) {
	p.t.Helper()
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code, err := p.client.Exec(ctx, control.ExecRequest{App: app, Args: args, Stdout: &out, Stderr: &out})
	if err != nil {
		p.t.Fatalf("exec %q: %v", args, err)
	}
	return out.String(), code
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// pidAlive reports whether pid runs (and is not a zombie).
func pidAlive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
