package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rkt/rkt/tests/testutil"
)

// The machine's crictl talks to the packaged socket, as an admin's would.
const nspawnCrictlConf = `runtime-endpoint: unix:///run/rkt/kubelet-service.sock
image-endpoint: unix:///run/rkt/kubelet-service.sock
timeout: 60
`

// TestSystemdNspawn boots systemd 252 in systemd-nspawn (a cached Debian
// rootfs, an overlay per run, /var/lib/rkt a plain host dir) and checks rkt
// under a real systemd, installed twice:
//   - "make install": `make install DESTDIR=<root> PREFIX=/usr`, then
//     sysusers, tmpfiles and the socket enabled by hand: the first CRI call
//     activates the service (Type=notify: active only once READY=1 came),
//     host-network and bridge pods run with stage1 and apps in their own
//     scopes, pods survive `systemctl restart` and `stop` of the service and
//     the socket activates it again, rkt-gc.timer runs rkt-gc.service,
//     which collects an exited pod;
//   - "pure cgroup v2": the same install on a machine whose only cgroup
//     hierarchy is cgroup2, as on most of today's distributions: the same
//     pods, restarts and rkt-gc runs, with stage1 and apps in v2 scopes, an
//     exec in its container's scope, CPU statistics from it, and no scope
//     or cgroup left after the pod's removal;
//   - "deb": `make deb`, then `apt install ./rkt_*.deb` on the clean rootfs:
//     the group is created, the socket and timer enabled and started, and
//     crictl runs a pod on the default network, which a reinstall (an
//     upgrade) that restarts the service leaves running; `apt remove` stops
//     the socket and removes its file.
//
// In both, a pod in a slice of its own (the kubelet's per-pod slice) keeps
// the CPU usage of an app that exited.
// Each machine has no failed unit, powers off cleanly with pods running
// and leaves nothing on the host (mounts, cgroups, links, processes).
func TestSystemdNspawn(t *testing.T) {
	rootfs := testutil.DebianRootfs(t)
	repo, err := filepath.Abs("..")
	must(t, "repository root", err)
	// One build dir for both cases: make deb's install runs in
	// <build>/deb/build with the same paths as the make install case.
	build := t.TempDir()
	img := filepath.Join(t.TempDir(), "busybox.tar")
	testutil.WriteDockerArchive(t, img, "localhost/busybox:1", testutil.Busybox(t))
	crictl := toolPath(t, "crictl")
	node := func(t *testing.T) *testutil.Machine {
		m := testutil.NewMachine(t, rootfs)
		m.CopyFile(crictl, "/usr/local/bin/crictl", 0o755)
		m.WriteFile("/etc/crictl.yaml", nspawnCrictlConf, 0o644)
		m.CopyFile(img, "/root/busybox.tar", 0o644)
		return m
	}
	// make install, boot, then what a package's scripts would do
	installAndBoot := func(t *testing.T, m *testutil.Machine, units ...string) {
		start := time.Now()
		makeIn(t, repo, "install", "DESTDIR="+m.Root, "BUILDDIR="+filepath.Join(build, "deb", "build"),
			"PREFIX=/usr", "LOCAL_CONFIG=/etc/rkt", "SYSTEMD_UNITDIR=/usr/lib/systemd/system")
		t.Logf("make install: %v", time.Since(start).Round(time.Millisecond))
		t.Logf("boot: %v", m.Boot().Round(time.Millisecond))
		m.MustExec("systemd-sysusers")
		m.MustExec("systemd-tmpfiles", "--create", "rkt.conf")
		m.MustExec(append([]string{"systemctl", "enable", "--now"}, units...)...)
	}

	// "make install" on the host's cgroup layout, then on cgroup2 alone
	for _, unified := range []bool{false, true} {
		name := "make install"
		if unified {
			name = "pure cgroup v2"
		}
		t.Run(name, func(t *testing.T) {
			m := node(t)
			m.Unified = unified
			installAndBoot(t, m, "rkt-kubelet-service.socket", "rkt-gc.timer")
			if fs := m.MustExec("stat", "-f", "-c", "%T", "/sys/fs/cgroup"); unified && fs != "cgroup2fs" {
				t.Fatalf("/sys/fs/cgroup in the machine is %s, want cgroup2fs", fs)
			}
			checkInstalledNode(t, m)
			testServiceLifecycle(t, m)
			testGC(t, m)
			if unified {
				checkUnifiedPod(t, m)
			}
			checkPodSliceCPU(t, m)
			checkCgroupfsParentRefused(t, m)
			checkNoFailedUnits(t, m)
			poweroffWithPods(t, m)
			m.CheckHost()
		})
	}

	t.Run("deb", func(t *testing.T) {
		start := time.Now()
		makeIn(t, repo, "deb", "BUILDDIR="+build, "DEB_COMPRESS=gzip")
		t.Logf("make deb: %v", time.Since(start).Round(time.Millisecond))
		debs, _ := filepath.Glob(filepath.Join(build, "rkt_*.deb"))
		if len(debs) != 1 {
			t.Fatalf("make deb made %v, want one rkt_*.deb in %s", debs, build)
		}
		m := node(t)
		m.CopyFile(debs[0], "/root/"+filepath.Base(debs[0]), 0o644)
		t.Logf("boot: %v", m.Boot().Round(time.Millisecond))
		if out, err := m.Exec("getent", "group", "rkt"); err == nil {
			t.Fatalf("the clean rootfs has a rkt group already: %s", out)
		}
		start = time.Now()
		m.MustExec("apt-get", "install", "-y", "--no-install-recommends", "/root/"+filepath.Base(debs[0]))
		t.Logf("apt install: %v", time.Since(start).Round(time.Millisecond))
		for _, u := range []string{"rkt-kubelet-service.socket", "rkt-gc.timer"} {
			if st := m.MustExec("systemctl", "is-enabled", u); st != "enabled" {
				t.Errorf("%s is %s after apt install, want enabled", u, st)
			}
		}
		for _, f := range []string{"/usr/share/man/man1/rkt.1.gz", "/usr/share/man/man1/rkt-run.1.gz",
			"/usr/share/bash-completion/completions/rkt", "/usr/share/zsh/vendor-completions/_rkt",
			"/usr/share/doc/rkt/copyright", "/usr/share/doc/rkt/Documentation/kubelet-service.md"} {
			m.MustExec("test", "-s", f)
		}
		checkInstalledNode(t, m)

		// a pod's whole life with crictl, on the network a fresh install has
		pod, ctr := runCrictlPod(t, m, "deb", false)
		if out := m.MustExec("crictl", "exec", ctr, "echo", "hello from rkt"); out != "hello from rkt" {
			t.Errorf("crictl exec printed %q", out)
		}
		// an upgrade (here the same version again) restarts the running
		// service on the new binary; the pod keeps running
		pid := m.MustExec("systemctl", "show", "-p", "MainPID", "--value", "rkt-kubelet-service.service")
		m.MustExec("apt-get", "install", "--reinstall", "-y", "/root/"+filepath.Base(debs[0]))
		checkUnit(t, m, "rkt-kubelet-service.service", "ActiveState=active")
		if now := m.MustExec("systemctl", "show", "-p", "MainPID", "--value", "rkt-kubelet-service.service"); now == pid {
			t.Errorf("the service was not restarted by the upgrade: MainPID %s", now)
		}
		if out := m.MustExec("crictl", "ps", "-q", "--no-trunc", "--state", "running"); !strings.Contains(out, ctr) {
			t.Errorf("container %s is not running after the upgrade:\n%s", ctr, out)
		}
		m.MustExec("crictl", "exec", ctr, "true")
		m.MustExec("crictl", "stop", ctr)
		m.MustExec("crictl", "rm", ctr)
		m.MustExec("crictl", "stopp", pod)
		m.MustExec("crictl", "rmp", pod)
		if out := m.MustExec("crictl", "pods", "-q"); out != "" {
			t.Errorf("crictl pods after rmp: %q", out)
		}

		m.MustExec("apt-get", "remove", "-y", "rkt")
		if st, _ := m.Exec("systemctl", "is-active", "rkt-kubelet-service.socket"); strings.TrimSpace(st) == "active" {
			t.Errorf("the socket is still active after apt remove")
		}
		if _, err := m.Exec("test", "-e", "/run/rkt/kubelet-service.sock"); err == nil {
			t.Errorf("apt remove left the socket file")
		}
		m.MustExec("getent", "group", "rkt") // kept: files may belong to it
		checkNoFailedUnits(t, m)
		t.Logf("poweroff: %v", m.Poweroff().Round(time.Millisecond))
		m.CheckHost()
	})
}

// makeIn runs make in the repository.
func makeIn(t *testing.T, repo string, args ...string) {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-C", repo}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// checkInstalledNode: the group exists, the socket unit listens on a
// root:rkt 0660 socket and the service is not started before a client
// comes; the first CRI call starts it, and it is active (Type=notify:
// READY=1 came) with the network ready with no CNI config; the image
// imports offline.
func checkInstalledNode(t *testing.T, m *testutil.Machine) {
	t.Helper()
	m.MustExec("getent", "group", "rkt")
	if out := m.MustExec("stat", "-c", "%A %U %G", "/run/rkt/kubelet-service.sock"); out != "srw-rw---- root rkt" {
		t.Errorf("socket file: %s, want srw-rw---- root rkt", out)
	}
	if st, _ := m.Exec("systemctl", "is-active", "rkt-kubelet-service.service"); strings.TrimSpace(st) != "inactive" {
		t.Errorf("the service is %q before any client, want inactive (socket activation)", strings.TrimSpace(st))
	}
	if out := m.MustExec("ls", "-A", "/etc/rkt/net.d"); out != "" {
		t.Errorf("/etc/rkt/net.d is not empty on a fresh install: %s", out)
	}
	start := time.Now()
	m.MustExec("crictl", "version")
	t.Logf("first CRI call (activation): %v", time.Since(start).Round(time.Millisecond))
	checkUnit(t, m, "rkt-kubelet-service.service", "Type=notify", "ActiveState=active", "SubState=running",
		"RequiresMountsFor=/var/lib/rkt")
	var info struct {
		Status struct {
			Conditions []struct {
				Type   string `json:"type"`
				Status bool   `json:"status"`
			} `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(m.MustExec("crictl", "info")), &info); err != nil {
		t.Fatalf("crictl info: %v", err)
	}
	for _, c := range info.Status.Conditions {
		if !c.Status {
			t.Errorf("condition %s is false on a fresh install", c.Type)
		}
	}
	m.MustExec("rkt", "fetch", "--no-progress", "docker-archive:/root/busybox.tar")
}

// checkUnit fails unless `systemctl show` of the unit has every property.
func checkUnit(t *testing.T, m *testutil.Machine, unit string, props ...string) {
	t.Helper()
	var keys []string
	for _, p := range props {
		keys = append(keys, "-p", strings.SplitN(p, "=", 2)[0])
	}
	out := m.MustExec(append([]string{"systemctl", "show", unit}, keys...)...)
	for _, p := range props {
		if !slices.Contains(strings.Split(out, "\n"), p) {
			t.Errorf("%s: want %s, have:\n%s", unit, p, out)
		}
	}
}

// runCrictlPod runs a pod (host network or the default one) with one
// sleeping container through crictl and returns their IDs. The pod's
// network is checked from inside the container.
func runCrictlPod(t *testing.T, m *testutil.Machine, name string, hostNet bool) (pod, ctr string) {
	t.Helper()
	linux := map[string]any{}
	if hostNet {
		linux["security_context"] = map[string]any{"namespace_options": map[string]any{"network": 2}}
	}
	podJSON, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"name": name, "namespace": "nspawn", "uid": name + "-uid"},
		"hostname": name, "log_directory": "/var/log/pods/" + name, "linux": linux})
	ctrJSON, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"name": "sleeper"}, "image": map[string]any{"image": "localhost/busybox:1"},
		"command": []string{"sleep", "100000"}, "log_path": "sleeper.log", "linux": map[string]any{}})
	m.WriteFile("/root/"+name+"-pod.json", string(podJSON), 0o644)
	m.WriteFile("/root/"+name+"-ctr.json", string(ctrJSON), 0o644)
	pod = m.MustExec("crictl", "runp", "/root/"+name+"-pod.json")
	ctr = m.MustExec("crictl", "create", pod, "/root/"+name+"-ctr.json", "/root/"+name+"-pod.json")
	m.MustExec("crictl", "start", ctr)
	netns := m.MustExec("crictl", "exec", ctr, "readlink", "/proc/self/ns/net")
	hostNetns := m.MustExec("readlink", "/proc/1/ns/net")
	if hostNet != (netns == hostNetns) {
		t.Errorf("pod %s: network namespace %s, the machine's %s (host network: %v)", name, netns, hostNetns, hostNet)
	}
	if !hostNet {
		addrs := m.MustExec("crictl", "exec", ctr, "ip", "-4", "-o", "addr", "show", "eth0")
		if !strings.Contains(addrs, "inet 172.16.28.") {
			t.Errorf("pod %s has no address on the built-in default network 172.16.28.0/24:\n%s", name, addrs)
		}
		m.MustExec("crictl", "exec", ctr, "ping", "-c", "1", "-W", "5", "172.16.28.1")
	}
	return pod, ctr
}

// podScopes returns the cgroup (name=systemd) of the pod's stage1 scope and
// of the container, checking both are units of their own: stage1 in
// rkt-stage1-<pod>.scope, the app in a libcontainer scope.
func podScopes(t *testing.T, m *testutil.Machine, pod, ctr string) (stage1, app string) {
	t.Helper()
	unit := "rkt-stage1-" + pod + ".scope"
	checkUnit(t, m, unit, "ActiveState=active", "RequiresMountsFor=/var/lib/rkt/pods/run/"+pod)
	// at shutdown the supervisor (the pod's lock, files open) stops before
	// the mount its directory is on
	if after := m.MustExec("systemctl", "show", "-p", "After", "--value", unit); !slices.Contains(strings.Fields(after), "var-lib-rkt.mount") {
		t.Errorf("%s is not ordered after var-lib-rkt.mount: After=%s", unit, after)
	}
	stage1 = strings.TrimPrefix(m.MustExec("systemctl", "show", "-p", "ControlGroup", "--value", unit), "/")
	for _, l := range strings.Split(m.MustExec("crictl", "exec", ctr, "cat", "/proc/self/cgroup"), "\n") {
		if p, ok := strings.CutPrefix(l, "1:name=systemd:"); ok {
			app = p
		} else if p, ok := strings.CutPrefix(l, "0::"); ok && app == "" {
			app = p
		}
	}
	if !strings.HasSuffix(app, ".scope") || strings.Contains(app, "rkt-stage1-") {
		t.Errorf("container %s runs in cgroup %q, want a scope of its own", ctr, app)
	} else {
		checkUnit(t, m, filepath.Base(app), "ActiveState=active")
	}
	return stage1, app
}

// scopeProcs returns the processes of the stage1 scope.
func scopeProcs(t *testing.T, m *testutil.Machine, cgroup string) string {
	t.Helper()
	hierarchy := "/sys/fs/cgroup/systemd/"
	if m.Unified {
		hierarchy = "/sys/fs/cgroup/"
	}
	return m.MustExec("cat", hierarchy+cgroup+"/cgroup.procs")
}

// testServiceLifecycle runs a bridge and a host-network pod, then restarts
// and stops the service: the pods' supervisors and apps keep running, the
// socket stays and activates the service again.
func testServiceLifecycle(t *testing.T, m *testutil.Machine) {
	t.Helper()
	bridgePod, bridgeCtr := runCrictlPod(t, m, "bridge", false)
	hostPod, hostCtr := runCrictlPod(t, m, "host", true)
	type podRef struct{ pod, ctr, stage1, procs string }
	pods := []*podRef{{pod: bridgePod, ctr: bridgeCtr}, {pod: hostPod, ctr: hostCtr}}
	for _, p := range pods {
		p.stage1, _ = podScopes(t, m, p.pod, p.ctr)
		p.procs = scopeProcs(t, m, p.stage1)
	}
	stillRunning := func(when string) {
		t.Helper()
		ready := m.MustExec("crictl", "pods", "-q", "--no-trunc", "--state", "ready")
		running := m.MustExec("crictl", "ps", "-q", "--no-trunc", "--state", "running")
		for _, p := range pods {
			if procs := scopeProcs(t, m, p.stage1); procs != p.procs {
				t.Errorf("%s: stage1 of %s: processes %q, before %q", when, p.pod, procs, p.procs)
			}
			if !strings.Contains(ready, p.pod) || !strings.Contains(running, p.ctr) {
				t.Errorf("%s: pod %s or container %s not running:\npods:\n%s\ncontainers:\n%s", when, p.pod, p.ctr, ready, running)
			}
			m.MustExec("crictl", "exec", p.ctr, "true")
		}
	}
	pid := m.MustExec("systemctl", "show", "-p", "MainPID", "--value", "rkt-kubelet-service.service")
	m.MustExec("systemctl", "restart", "rkt-kubelet-service.service")
	if now := m.MustExec("systemctl", "show", "-p", "MainPID", "--value", "rkt-kubelet-service.service"); now == pid || now == "0" {
		t.Errorf("MainPID %s after restart, %s before", now, pid)
	}
	stillRunning("after systemctl restart")

	m.MustExec("systemctl", "stop", "rkt-kubelet-service.service")
	checkUnit(t, m, "rkt-kubelet-service.service", "ActiveState=inactive")
	checkUnit(t, m, "rkt-kubelet-service.socket", "ActiveState=active")
	for _, p := range pods {
		if procs := scopeProcs(t, m, p.stage1); procs != p.procs {
			t.Errorf("after systemctl stop: stage1 of %s: processes %q, before %q", p.pod, procs, p.procs)
		}
	}
	stillRunning("after systemctl stop and re-activation") // its first call activates the service
	checkUnit(t, m, "rkt-kubelet-service.service", "ActiveState=active")
}

// testGC: rkt-gc.timer is active and ran rkt-gc.service when it started; a
// run of the service moves an exited pod to garbage.
func testGC(t *testing.T, m *testutil.Machine) {
	t.Helper()
	checkUnit(t, m, "rkt-gc.timer", "ActiveState=active", "UnitFileState=enabled")
	checkUnit(t, m, "rkt-gc.service", "Result=success")
	if ts := m.MustExec("systemctl", "show", "-p", "ExecMainStartTimestampMonotonic", "--value", "rkt-gc.service"); ts == "0" || ts == "" {
		t.Errorf("rkt-gc.timer did not run rkt-gc.service")
	}
	m.MustExec("rkt", "run", "--net=host", "--uuid-file-save=/root/exited.uuid", "localhost/busybox:1", "--exec=/bin/true")
	b, err := os.ReadFile(filepath.Join(m.Root, "root/exited.uuid"))
	must(t, "read the exited pod's UUID", err)
	uuid := strings.TrimSpace(string(b))
	m.MustExec("systemctl", "start", "rkt-gc.service")
	checkUnit(t, m, "rkt-gc.service", "Result=success", "ExecMainStatus=0")
	if _, err := os.Stat(filepath.Join(m.DataDir, "pods", "exited-garbage", uuid)); err != nil {
		t.Errorf("rkt-gc.service did not move exited pod %s to garbage: %v", uuid, err)
	}
}

// checkUnifiedPod runs a pod on a cgroup2-only machine: an exec (crictl's
// and rkt enter's) joins the container's scope, the CPU statistics are the
// scope's, and removing the pod stops its scopes and removes their cgroups.
func checkUnifiedPod(t *testing.T, m *testutil.Machine) {
	t.Helper()
	pod, ctr := runCrictlPod(t, m, "v2", false)
	stage1, app := podScopes(t, m, pod, ctr)
	// the CLI sees the CRI's pod, and both ways in join the container's scope
	if out := m.MustExec("rkt", "app", "list", "--no-legend", pod); !strings.Contains(out, "sleeper") {
		t.Errorf("rkt app list %s does not show the container:\n%s", pod, out)
	}
	for _, enter := range [][]string{{"crictl", "exec", ctr}, {"rkt", "enter", "--tty=false", pod}} {
		if cg := m.MustExec(append(enter, "cat", "/proc/self/cgroup")...); !slices.Contains(strings.Split(cg, "\n"), "0::"+app) {
			t.Errorf("%q runs outside the container's scope %s:\n%s", enter, app, cg)
		}
	}
	var stats struct {
		Stats []struct {
			CPU struct {
				UsageCoreNanoSeconds struct {
					Value string `json:"value"`
				} `json:"usageCoreNanoSeconds"`
			} `json:"cpu"`
		} `json:"stats"`
	}
	if err := json.Unmarshal([]byte(m.MustExec("crictl", "stats", "-o", "json", ctr)), &stats); err != nil {
		t.Fatalf("crictl stats: %v", err)
	}
	if len(stats.Stats) != 1 || stats.Stats[0].CPU.UsageCoreNanoSeconds.Value == "" || stats.Stats[0].CPU.UsageCoreNanoSeconds.Value == "0" {
		t.Errorf("crictl stats %s: no CPU usage from its scope: %+v", ctr, stats)
	}
	m.MustExec("crictl", "stopp", pod)
	m.MustExec("crictl", "rmp", pod)
	for _, cg := range []string{stage1, app} {
		unit := filepath.Base(cg)
		if st, _ := m.Exec("systemctl", "is-active", unit); strings.TrimSpace(st) == "active" {
			t.Errorf("%s is still active after the pod's removal", unit)
		}
		if _, err := m.Exec("test", "-e", filepath.Join("/sys/fs/cgroup", cg)); err == nil {
			t.Errorf("cgroup %s is left after the pod's removal", cg)
		}
	}
}

// checkPodSliceCPU runs a sandbox whose cgroup parent is a slice of its
// own, as the kubelet's per-pod slice, with a container that burns CPU,
// then sleeps and exits, and one that keeps running: the sandbox's CPU
// usage (crictl statsp, ListPodSandboxStats) after the exit is at least
// what it was before, as the kubelet's rates need (the slice keeps the
// usage of its removed scopes).
// checkCgroupfsParentRefused: under systemd, a sandbox whose cgroup parent
// is a cgroupfs path (a kubelet on the cgroupfs driver) is refused, not run
// with its apps in system.slice, out of its pod's limits.
func checkCgroupfsParentRefused(t *testing.T, m *testutil.Machine) {
	t.Helper()
	podJSON, _ := json.Marshal(map[string]any{
		"metadata":      map[string]any{"name": "cgroupfs", "namespace": "nspawn", "uid": "cgroupfs-uid"},
		"log_directory": "/var/log/pods/cgroupfs",
		"linux": map[string]any{"cgroup_parent": "/kubepods/burstable/podcgroupfs",
			"security_context": map[string]any{"namespace_options": map[string]any{"network": 2}}}})
	m.WriteFile("/root/cgroupfs-pod.json", string(podJSON), 0o600)
	out, err := m.Exec("crictl", "runp", "/root/cgroupfs-pod.json")
	if err == nil || !strings.Contains(err.Error(), "InvalidArgument") || !strings.Contains(err.Error(), "not a systemd slice") {
		t.Errorf("crictl runp with a cgroupfs cgroup parent under systemd: %v\n%s", err, out)
	}
	if pods := m.MustExec("crictl", "pods", "-q", "--name", "cgroupfs"); strings.TrimSpace(pods) != "" {
		t.Errorf("a refused sandbox is listed: %s", pods)
	}
}

func checkPodSliceCPU(t *testing.T, m *testutil.Machine) {
	t.Helper()
	const slice = "kubepods-burstable-podcpu.slice"
	podJSON, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"name": "cpu", "namespace": "nspawn", "uid": "cpu-uid"},
		"hostname": "cpu", "log_directory": "/var/log/pods/cpu",
		"linux": map[string]any{"cgroup_parent": slice,
			"security_context": map[string]any{"namespace_options": map[string]any{"network": 2}}}})
	m.WriteFile("/root/cpu-pod.json", string(podJSON), 0o600)
	pod := m.MustExec("crictl", "runp", "/root/cpu-pod.json")
	ctrs := map[string]string{}
	for name, cmd := range map[string]string{
		"sleeper": "sleep 100000",
		// about a second of CPU, then long enough for a stats refresh (10 s)
		"burner": "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; sleep 25",
	} {
		ctrJSON, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"name": name}, "image": map[string]any{"image": "localhost/busybox:1"},
			"command": []string{"sh", "-c", cmd}, "log_path": name + ".log", "linux": map[string]any{}})
		m.WriteFile("/root/cpu-"+name+".json", string(ctrJSON), 0o600)
		ctrs[name] = m.MustExec("crictl", "create", pod, "/root/cpu-"+name+".json", "/root/cpu-pod.json")
		m.MustExec("crictl", "start", ctrs[name])
	}
	if cg := m.MustExec("crictl", "exec", ctrs["sleeper"], "cat", "/proc/self/cgroup"); !strings.Contains(cg, "/kubepods.slice/kubepods-burstable.slice/"+slice+"/") {
		t.Errorf("the sleeper runs outside the pod's slice %s:\n%s", slice, cg)
	}
	podCPU := func() uint64 {
		var stats struct {
			Stats []struct {
				Linux struct {
					CPU struct {
						UsageCoreNanoSeconds struct {
							Value string `json:"value"`
						} `json:"usageCoreNanoSeconds"`
					} `json:"cpu"`
				} `json:"linux"`
			} `json:"stats"`
		}
		out := m.MustExec("crictl", "statsp", "-o", "json", "--id", pod)
		if err := json.Unmarshal([]byte(out), &stats); err != nil || len(stats.Stats) != 1 {
			t.Fatalf("crictl statsp %s: %v\n%s", pod, err, out)
		}
		n, _ := strconv.ParseUint(stats.Stats[0].Linux.CPU.UsageCoreNanoSeconds.Value, 10, 64)
		return n
	}
	state := func(ctr string) string {
		return m.MustExec("crictl", "inspect", "-o", "go-template", "--template", "{{.status.state}}", ctr)
	}
	// the most the pod used while the burner ran
	var before uint64
	for state(ctrs["burner"]) == "CONTAINER_RUNNING" {
		before = max(before, podCPU())
		time.Sleep(time.Second)
	}
	if before < uint64(200*time.Millisecond) {
		t.Fatalf("pod %s used %v of CPU while its burner ran, want some", pod, time.Duration(before))
	}
	// after the stats cache's next refreshes (every 10 s)
	time.Sleep(21 * time.Second)
	if after := podCPU(); after < before {
		t.Errorf("pod %s's CPU usage went back from %v to %v when its burner exited", pod, time.Duration(before), time.Duration(after))
	} else {
		t.Logf("pod %s's CPU usage: %v while its burner ran, %v after", pod, time.Duration(before), time.Duration(after))
	}
	m.MustExec("crictl", "stopp", pod)
	m.MustExec("crictl", "rmp", pod)
}

// poweroffWithPods powers the machine off with testServiceLifecycle's two
// pods running: systemd stops their supervisors' scopes on the way down.
func poweroffWithPods(t *testing.T, m *testutil.Machine) {
	t.Helper()
	t.Logf("poweroff with 2 pods running: %v", m.Poweroff().Round(time.Millisecond))
	if b, _ := os.ReadFile(m.Console); strings.Count(string(b), "Stopped rkt-stage1-") < 2 {
		t.Errorf("the console shows no stop of the two stage1 scopes:\n%s", m.ConsoleTail(40))
	}
}

// checkNoFailedUnits fails if the system is degraded.
func checkNoFailedUnits(t *testing.T, m *testutil.Machine) {
	t.Helper()
	if failed := m.MustExec("systemctl", "--failed", "--no-legend", "--plain"); failed != "" {
		t.Errorf("failed units:\n%s", failed)
	}
}
