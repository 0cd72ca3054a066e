package testutil

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// NspawnCacheDir holds the Debian rootfs that BootMachine's containers run
// (built once by mmdebstrap, about 100 s and 265 MB; never modified after).
const NspawnCacheDir = "/var/cache/rkt-tests"

// EnvDebianMirror overrides the Debian mirror the rootfs is built from
// (default: the first one in /etc/apt/sources.list*).
const EnvDebianMirror = "RKT_TEST_DEBIAN_MIRROR"

// nspawnPackages is what the rootfs has besides Debian's minbase: systemd
// and dbus to boot, what rkt's package depends on (so that apt installs it
// with no network) and busybox.
var nspawnPackages = []string{"systemd", "systemd-sysv", "dbus", "iproute2", "iptables", "libseccomp2",
	"busybox-static", "containernetworking-plugins", "procps"}

// machineInit is the container's PID 1: nspawn mounts the cgroup v1
// controllers read-only, where rkt could create no pod cgroups; the
// container has a cgroup namespace, so it sees only its own subtree. A
// machine on the cgroup2 hierarchy alone has nothing to remount.
const machineInit = `#!/bin/sh
if [ ! -e /sys/fs/cgroup/cgroup.controllers ]; then
	for d in /sys/fs/cgroup/*/; do
		mount -o remount,bind,rw "$d" || echo "rkt-test-init: cannot make $d writable" >&2
	done
fi
exec /lib/systemd/systemd "$@"
`

// RequireNspawn skips the test where systemd cannot be booted in a
// container: not root, or systemd-nspawn or mmdebstrap missing (`make deps`
// installs them). Under CI (CI=true) a missing tool fails the test instead.
func RequireNspawn(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("booting systemd in systemd-nspawn needs root")
	}
	for _, tool := range []string{"systemd-nspawn", "mmdebstrap", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("%s is not installed (make deps: apt-get install --no-install-recommends systemd-container mmdebstrap)", tool)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/systemd/cgroup.procs"); err != nil {
		if _, err2 := os.Stat("/sys/fs/cgroup/cgroup.procs"); err2 != nil {
			t.Skipf("no name=systemd or unified cgroup hierarchy for systemd-nspawn: %v", err)
		}
	}
}

// DebianRootfs returns a Debian rootfs with systemd (the host's release),
// built by mmdebstrap under NspawnCacheDir on first use and shared by later
// runs. Treat it as read-only: BootMachine runs an overlay on top of it.
func DebianRootfs(t testing.TB) string {
	t.Helper()
	RequireNspawn(t)
	suite, err := debianSuite()
	if err != nil {
		t.Skipf("not a Debian host: %v", err)
	}
	sum := sha256.Sum256([]byte(suite + " " + strings.Join(nspawnPackages, ",")))
	dir := filepath.Join(NspawnCacheDir, suite+"-"+hex.EncodeToString(sum[:6]))
	rootfs := filepath.Join(dir, "rootfs")
	if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
		return rootfs
	}
	if err := os.MkdirAll(NspawnCacheDir, 0o755); err != nil {
		t.Fatalf("cannot create %s: %v", NspawnCacheDir, err)
	}
	lock, err := os.OpenFile(filepath.Join(NspawnCacheDir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("cannot open the rootfs cache lock: %v", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("cannot lock the rootfs cache: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
		return rootfs // built by another process meanwhile
	}
	mirror := os.Getenv(EnvDebianMirror)
	if mirror == "" {
		if mirror, err = aptMirror("/etc/apt", suite); err != nil {
			t.Fatalf("no Debian mirror for mmdebstrap (set $%s): %v", EnvDebianMirror, err)
		}
	}
	os.RemoveAll(dir) // an interrupted build
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mmdebstrap", "--variant=minbase", "--include="+strings.Join(nspawnPackages, ","),
		suite, rootfs, mirror)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("mmdebstrap %s from %s: %v\n%s", suite, mirror, err, tail(string(out), 40))
	}
	if err := os.WriteFile(filepath.Join(dir, "complete"), []byte(mirror+"\n"), 0o644); err != nil {
		t.Fatalf("cannot mark the rootfs complete: %v", err)
	}
	t.Logf("built the %s rootfs in %s from %s in %v", suite, rootfs, mirror, time.Since(start).Round(time.Second))
	return rootfs
}

// debianSuite returns the host's Debian codename (bookworm).
func debianSuite() (string, error) {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VERSION_CODENAME="); ok && v != "" {
			return strings.Trim(v, `"`), nil
		}
	}
	return "", fmt.Errorf("no VERSION_CODENAME in /etc/os-release")
}

// aptMirror returns the first URI that apt's sources (in aptDir, as
// /etc/apt) give for suite, in the one-line (sources.list) or deb822
// (*.sources) format.
func aptMirror(aptDir, suite string) (string, error) {
	files := []string{filepath.Join(aptDir, "sources.list")}
	for _, pat := range []string{"sources.list.d/*.list", "sources.list.d/*.sources"} {
		m, _ := filepath.Glob(filepath.Join(aptDir, pat))
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if strings.HasSuffix(f, ".sources") {
			for _, stanza := range strings.Split(string(b), "\n\n") {
				fields := map[string][]string{}
				for _, l := range strings.Split(stanza, "\n") {
					if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "#") {
						fields[strings.ToLower(k)] = strings.Fields(v)
					}
				}
				if slices.Contains(fields["types"], "deb") && slices.Contains(fields["suites"], suite) && len(fields["uris"]) > 0 {
					return fields["uris"][0], nil
				}
			}
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) > 0 && f[0] == "deb" {
				f = f[1:]
				if len(f) > 0 && strings.HasPrefix(f[0], "[") { // [options]
					for len(f) > 0 && !strings.HasSuffix(f[0], "]") {
						f = f[1:]
					}
					f = f[1:]
				}
				if len(f) >= 2 && f[1] == suite {
					return f[0], nil
				}
			}
		}
	}
	return "", fmt.Errorf("no deb source for %s in %v", suite, files)
}

// Machine is systemd booted in systemd-nspawn on an overlay of a rootfs,
// with a private network and its own cgroups. Its /var/lib/rkt is a plain
// host directory (rkt mounts overlays there, which overlayfs cannot hold).
type Machine struct {
	T       testing.TB
	Name    string
	Root    string // the container's root, writable from the host before Boot
	DataDir string // host directory bound to the container's /var/lib/rkt
	Console string // file with the container's console output
	// Unified boots the machine on the cgroup2 hierarchy alone, as on a
	// pure cgroup v2 host (set before Boot). On a hybrid host the v1
	// hierarchies keep their controllers, so the machine has none to
	// delegate: no cpu, memory or pids limits there.
	Unified bool

	dir     string
	cgroups []string // our cgroup in each hierarchy
	netns   string   // the container's network namespace ("net:[inode]")
	cmd     *exec.Cmd
	done    chan error
	pid     int  // the container's PID 1, as the host sees it
	checked bool // the host was checked for leftovers
}

// NewMachine prepares a machine on an overlay of rootfs: fill Root (install
// rkt, files), then Boot, and finally Poweroff. Cleanup stops it if it is
// still running and checks the host (CheckHost) unless the test did.
func NewMachine(t testing.TB, rootfs string) *Machine {
	t.Helper()
	dir := t.TempDir()
	m := &Machine{T: t, Name: "rkt-nspawn-" + randHex(4), dir: dir, Root: filepath.Join(dir, "root"),
		DataDir: filepath.Join(dir, "data"), Console: filepath.Join(dir, "console.log")}
	for _, d := range []string{filepath.Join(dir, "upper"), filepath.Join(dir, "work"), m.Root, m.DataDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts := "lowerdir=" + rootfs + ",upperdir=" + filepath.Join(dir, "upper") + ",workdir=" + filepath.Join(dir, "work")
	if err := syscall.Mount("overlay", m.Root, "overlay", 0, opts); err != nil {
		t.Fatalf("cannot mount an overlay on %s: %v", rootfs, err)
	}
	t.Cleanup(m.cleanup)
	m.WriteFile("/usr/local/sbin/rkt-test-init", machineInit, 0o755)
	return m
}

// WriteFile writes a file into the machine's root.
func (m *Machine) WriteFile(path, content string, mode os.FileMode) {
	m.T.Helper()
	p := filepath.Join(m.Root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		m.T.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		m.T.Fatalf("cannot write %s: %v", p, err)
	}
}

// CopyFile copies a host file into the machine's root.
func (m *Machine) CopyFile(src, path string, mode os.FileMode) {
	m.T.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		m.T.Fatal(err)
	}
	m.WriteFile(path, string(b), mode)
}

// Boot starts systemd-nspawn in a cgroup of its own (nspawn creates fixed
// payload/supervisor cgroups where it runs) and waits until systemd
// reports the system running with no failed unit.
func (m *Machine) Boot() time.Duration {
	m.T.Helper()
	procs := m.makeCgroups()
	console, err := os.Create(m.Console)
	if err != nil {
		m.T.Fatal(err)
	}
	defer console.Close()
	syscallFilter := "@keyring"
	if m.Unified {
		syscallFilter += " bpf" // device access on cgroup2 is an eBPF program
	}
	args := []string{"-c", `for p in $RKT_TEST_CGROUPS; do echo $$ > "$p" || exit 1; done; exec "$@"`, "sh",
		"systemd-nspawn", "--directory=" + m.Root, "--machine=" + m.Name,
		// the host's PID 1 is not systemd: nothing to register with
		"--register=no", "--keep-unit",
		"--capability=all", "--private-network",
		// runc joins a session keyring, which nspawn's filter forbids
		"--system-call-filter=" + syscallFilter,
		"--kill-signal=SIGRTMIN+3", "--setenv=SYSTEMD_COLORS=0",
		"--bind=" + m.DataDir + ":/var/lib/rkt",
		"/usr/local/sbin/rkt-test-init"}
	m.cmd = exec.Command("sh", args...)
	m.cmd.Env = append(os.Environ(), "RKT_TEST_CGROUPS="+strings.Join(procs, " "))
	if m.Unified {
		m.cmd.Env = append(m.cmd.Env, "SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1")
	}
	m.cmd.Stdout, m.cmd.Stderr = console, console
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	start := time.Now()
	if err := m.cmd.Start(); err != nil {
		m.T.Fatalf("cannot start systemd-nspawn: %v", err)
	}
	m.done = make(chan error, 1)
	go func() { m.done <- m.cmd.Wait() }()

	deadline := time.Now().Add(90 * time.Second)
	// systemctl fails until systemd listens on its private socket
	for m.pid == 0 || !exists(fmt.Sprintf("/proc/%d/root/run/systemd/private", m.pid)) {
		select {
		case err := <-m.done:
			m.done <- err
			m.T.Fatalf("systemd-nspawn exited while booting: %v\n%s", err, m.ConsoleTail(40))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.T.Fatalf("systemd did not start within 90s:\n%s", m.ConsoleTail(40))
		}
		if m.pid == 0 {
			m.pid = containerInit(m.cmd.Process.Pid)
		}
	}
	// read once systemd runs: the init found early may not have entered
	// the machine's namespaces yet
	m.netns, _ = os.Readlink(fmt.Sprintf("/proc/%d/ns/net", m.pid))
	if host, _ := os.Readlink("/proc/self/ns/net"); m.netns == host {
		m.T.Fatalf("the machine's init %d is in the host's network namespace %s", m.pid, host)
	}
	state, err := m.Exec("systemctl", "is-system-running", "--wait")
	if state = strings.TrimSpace(state); state != "running" {
		failed, _ := m.Exec("systemctl", "--failed", "--no-legend")
		m.T.Fatalf("system state %q after boot (%v), want running; failed units:\n%s\n%s", state, err, failed, m.ConsoleTail(40))
	}
	return time.Since(start)
}

// containerInit returns the child of the nspawn process that is PID 1 in
// its own PID namespace, or 0.
func containerInit(nspawn int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", nspawn, nspawn))
	if err != nil {
		return 0
	}
	for _, f := range strings.Fields(string(b)) {
		var pid int
		fmt.Sscan(f, &pid)
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "NSpid:"); ok {
				if ids := strings.Fields(v); len(ids) == 2 && ids[1] == "1" {
					return pid
				}
			}
		}
	}
	return 0
}

// makeCgroups creates a cgroup for the machine under the test's own in
// every hierarchy and returns their cgroup.procs files.
func (m *Machine) makeCgroups() []string {
	m.T.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		m.T.Fatal(err)
	}
	var procs []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		h := strings.TrimPrefix(parts[1], "name=")
		if h == "" {
			h = "unified"
			if _, err := os.Stat("/sys/fs/cgroup/unified"); err != nil {
				h = "" // pure cgroup v2
			}
		}
		parent := filepath.Join("/sys/fs/cgroup", h, parts[2])
		if _, err := os.Stat(parent); err != nil {
			continue // a hierarchy that is not mounted
		}
		d := filepath.Join(parent, m.Name)
		if err := os.Mkdir(d, 0o755); err != nil {
			m.T.Fatalf("cannot create cgroup %s: %v", d, err)
		}
		m.cgroups = append(m.cgroups, d)
		if strings.Contains(h, "cpuset") { // a cpuset cgroup needs cpus and mems before tasks
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, _ := os.ReadFile(filepath.Join(parent, f))
				if err := os.WriteFile(filepath.Join(d, f), v, 0o644); err != nil {
					m.T.Fatalf("cannot set %s of %s: %v", f, d, err)
				}
			}
		}
		procs = append(procs, filepath.Join(d, "cgroup.procs"))
	}
	return procs
}

// Exec runs a command in the machine (all its namespaces, as root) and
// returns its standard output; an error carries its standard error.
func (m *Machine) Exec(args ...string) (string, error) {
	m.T.Helper()
	if m.pid == 0 {
		m.T.Fatalf("Exec %v: the machine is not running", args)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"-t", fmt.Sprint(m.pid), "-a", "--"}, args...)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
		"LANG=C.UTF-8", "DEBIAN_FRONTEND=noninteractive", "SYSTEMD_COLORS=0", "SYSTEMD_PAGER="}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s: %w\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// MustExec runs a command in the machine and fails the test unless it
// succeeds; it returns the standard output trimmed.
func (m *Machine) MustExec(args ...string) string {
	m.T.Helper()
	out, err := m.Exec(args...)
	if err != nil {
		m.T.Fatalf("in the machine: %v\nstdout:\n%s", err, out)
	}
	return strings.TrimSpace(out)
}

// Poweroff runs `systemctl poweroff` and waits for nspawn to exit; it
// fails the test unless the container shut down within 60s, nspawn exited
// with status 0 and systemd reported no unit failing or timing out on the
// way down.
func (m *Machine) Poweroff() time.Duration {
	m.T.Helper()
	before, _ := os.ReadFile(m.Console)
	start := time.Now()
	m.MustExec("systemctl", "poweroff")
	select {
	case err := <-m.done:
		m.pid = 0
		if err != nil {
			m.T.Fatalf("systemd-nspawn after poweroff: %v\n%s", err, m.ConsoleTail(40))
		}
		m.done <- err
	case <-time.After(60 * time.Second):
		m.T.Fatalf("the machine did not power off within 60s:\n%s", m.ConsoleTail(40))
	}
	took := time.Since(start)
	after, _ := os.ReadFile(m.Console)
	if len(after) >= len(before) {
		failed := false
		for _, l := range strings.Split(string(after[len(before):]), "\n") {
			if strings.Contains(l, "FAILED") || strings.Contains(strings.ToLower(l), "timed out") {
				m.T.Errorf("shutdown: %s", strings.TrimSpace(l))
				failed = true
			}
		}
		if failed {
			m.T.Logf("the shutdown's console:\n%s", after[len(before):])
		}
	}
	return took
}

// ConsoleTail returns the last n lines of the console output.
func (m *Machine) ConsoleTail(n int) string {
	b, _ := os.ReadFile(m.Console)
	return tail(string(b), n)
}

// CheckHost fails the test for what the powered-off machine left on the
// host: mounts under its directories (its overlay is unmounted first),
// processes with its root or in its cgroups, cgroups (nspawn's payload and
// supervisor, the pods') that cannot be removed once empty, and its network
// namespace, held by a process or a mount (with it go the pods' bridge and
// veths: --private-network gives the host none of them).
func (m *Machine) CheckHost() {
	m.T.Helper()
	m.checked = true
	if err := syscall.Unmount(m.Root, 0); err != nil {
		m.T.Errorf("cannot unmount the machine's root %s: %v", m.Root, err)
		syscall.Unmount(m.Root, syscall.MNT_DETACH)
	}
	for _, l := range m.leftovers() {
		m.T.Errorf("left on the host: %s", l)
	}
}

func (m *Machine) leftovers() []string {
	var left []string
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 4 && under(unescapeMountPath(f[4]), m.dir) {
				left = append(left, "mount "+f[4])
			}
		}
	}
	netnsInode := strings.TrimSuffix(strings.TrimPrefix(m.netns, "net:["), "]")
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil && netnsInode != "" {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 4 && f[3] == "net:["+netnsInode+"]" {
				left = append(left, "the machine's network namespace mounted at "+f[4])
			}
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		cmd := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if root, err := os.Readlink(filepath.Join(p, "root")); err == nil && under(root, m.dir) {
			left = append(left, fmt.Sprintf("process %s (%s) with root %s", filepath.Base(p), cmd, root))
		} else if ns, err := os.Readlink(filepath.Join(p, "ns/net")); err == nil && m.netns != "" && ns == m.netns {
			left = append(left, fmt.Sprintf("process %s (%s) in the machine's network namespace", filepath.Base(p), cmd))
		}
	}
	for _, cg := range m.cgroups {
		var dirs []string
		filepath.Walk(cg, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- { // deepest first
			if b, _ := os.ReadFile(filepath.Join(dirs[i], "cgroup.procs")); len(strings.TrimSpace(string(b))) > 0 {
				left = append(left, fmt.Sprintf("cgroup %s with processes %s", dirs[i], strings.Fields(string(b))))
				continue
			}
			if err := syscall.Rmdir(dirs[i]); err != nil {
				left = append(left, fmt.Sprintf("cgroup %s: %v", dirs[i], err))
			}
		}
	}
	return left
}

func (m *Machine) cleanup() {
	if m.pid != 0 {
		m.T.Logf("the machine is still running at cleanup: stopping it\n%s", m.ConsoleTail(20))
		m.cmd.Process.Signal(syscall.SIGTERM) // nspawn sends the container SIGRTMIN+3: poweroff
		select {
		case <-m.done:
		case <-time.After(30 * time.Second):
			syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
			<-m.done
		}
		m.pid = 0
	}
	if !m.checked {
		m.CheckHost()
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func tail(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
