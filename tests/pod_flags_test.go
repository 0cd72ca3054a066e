package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rkt/rkt/tests/testutil"
)

// TestPodAppFlags checks the per-app flags of rkt run, one pod each.
func TestPodAppFlags(t *testing.T) {
	pe := newPodEnv(t)
	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "f"), []byte("from-host"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string // pod flags, then image flags after the image
		app  []string
		want string // substring of stdout
		code int
	}{
		{"env", nil, []string{"--set-env=A=1", "--set-env=B=two words"}, "1 two words", 0},
		{"user", nil, []string{"--user=nobody"}, "uid=65534", 0},
		{"user-group", nil, []string{"--user=1234", "--group=4321"}, "uid=1234 gid=4321", 0},
		{"working-dir", nil, []string{"--working-dir=/tmp"}, "/tmp", 0},
		{"readonly-rootfs", nil, []string{"--readonly-rootfs"}, "Read-only file system", 1},
		{"caps-retain", nil, []string{"--caps-retain=CAP_NET_BIND_SERVICE"}, "CapEff:\t0000000000000400", 0},
		{"caps-remove", nil, []string{"--caps-remove=CAP_CHOWN"}, "chown-denied", 0},
		{"seccomp-remove", nil, []string{"--seccomp=mode=remove,mkdir,mkdirat"}, "mkdir-denied", 0},
		{"seccomp-default", nil, nil, "Seccomp:\t2", 0},
		{"seccomp-unconfined", nil, []string{"--seccomp=unconfined"}, "Seccomp:\t0", 0},
		{"memory", nil, []string{"--memory=64M"}, "67108864", 0},
		{"cpu", nil, []string{"--cpu=500m"}, "50000 100000", 0},
		{"volume", []string{"--volume=data,kind=host,source=" + hostDir, "--volume=scratch,kind=empty"}, []string{"--mount=volume=data,target=/data", "--mount=volume=scratch,target=/scratch"}, "from-host|scratch-ok", 0},
		{"hostname-dns", []string{"--hostname=myhost", "--dns=10.0.0.53", "--dns-search=example.org"}, nil, "myhost|nameserver 10.0.0.53|search example.org", 0},
		{"name", nil, []string{"--name=custom"}, "custom", 0},
		{"pod-env", []string{"--set-env=P=pod"}, []string{"--set-env=A=app"}, "pod app", 0},
		{"supplementary-gids", nil, []string{"--user=1000", "--supplementary-gids=4000,4001"}, "groups=0(root),4000,4001", 0},
		{"caps-add", nil, []string{"--caps-add=CAP_SYS_ADMIN"}, "CapEff:\t00000000a82425fb", 0},
		{"privileged", nil, []string{"--privileged"}, "Seccomp:\t0", 0},
		{"no-new-privileges", nil, []string{"--no-new-privileges"}, "NoNewPrivs:\t1", 0},
		{"oom-score-adj", nil, []string{"--oom-score-adj=500"}, "500", 0},
		{"cpu-shares", nil, []string{"--cpu-shares=512"}, "512", 0},
	}
	scripts := map[string]string{
		"env":                `echo "$A $B"`,
		"user":               `id`,
		"user-group":         `id`,
		"working-dir":        `pwd`,
		"readonly-rootfs":    `touch /x`,
		"caps-retain":        `grep CapEff /proc/self/status`,
		"caps-remove":        `chown 1 /tmp 2>/dev/null && echo chown-ok || echo chown-denied`,
		"seccomp-remove":     `mkdir /newdir 2>/dev/null && echo mkdir-ok || echo mkdir-denied`,
		"seccomp-default":    `grep Seccomp: /proc/self/status`,
		"seccomp-unconfined": `grep Seccomp: /proc/self/status`,
		"memory":             `cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max`,
		"cpu":                `echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)`,
		"volume":             `cat /data/f; echo; touch /scratch/x && echo scratch-ok`,
		"hostname-dns":       `hostname; cat /etc/resolv.conf; cat /etc/hostname`,
		"name":               `cat /proc/self/cgroup | grep -o custom | head -1`,
		"pod-env":            `echo "$P $A"`,
		"supplementary-gids": `id`,
		"caps-add":           `grep CapEff /proc/self/status`,
		"privileged":         `grep Seccomp: /proc/self/status`,
		"no-new-privileges":  `grep NoNewPrivs /proc/self/status`,
		"oom-score-adj":      `cat /proc/self/oom_score_adj`,
		"cpu-shares":         `cat /sys/fs/cgroup/cpu/cpu.shares`,
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string{}, c.args...), pe.image)
			args = append(args, c.app...)
			args = append(args, "--exec=/bin/sh", "--", "-c", scripts[c.name])
			r := pe.WithT(t).Run(append(append([]string{"run"}, pe.netArgs()...), args...)...)
			if r.Code != c.code {
				t.Fatalf("exit code %d, want %d: %s", r.Code, c.code, r)
			}
			out := r.Stdout + r.Stderr
			for _, w := range strings.Split(c.want, "|") {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q: %s", w, r)
				}
			}
		})
	}
}

// TestPodMultipleApps runs two apps in one pod: they share the network and
// the pod exits with the failing app's code.
func TestPodMultipleApps(t *testing.T) {
	pe := newPodEnv(t)
	r := pe.run(pe.image, "--name=server", "--exec=/bin/sh", "--", "-c", "mkdir /www; echo shared > /www/index.html; httpd -f -p 8081 -h /www & sleep 3; exit 0",
		"---", pe.image, "--name=client", "--exec=/bin/sh", "--", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do wget -q -O- http://127.0.0.1:8081/ && exit 4; sleep 0.2; done; exit 1")
	if r.Code != 4 || !strings.Contains(r.Stdout, "shared") {
		t.Errorf("two apps: %s", r)
	}
}

// TestPodOOM: an app killed by the OOM killer is reported as such.
func TestPodOOM(t *testing.T) {
	pe := newPodEnv(t)
	uuid := pe.runDetached(pe.image, "--memory=16M", "--exec=/bin/sh", "--", "-c", "x=0123456789; while true; do x=$x$x; done")
	p := pe.waitState(uuid, "exited", 30*time.Second)
	if !p.Apps[0].OOMKilled || p.Apps[0].ExitCode == 0 {
		t.Errorf("OOM not reported: %+v", p.Apps[0])
	}
	r := pe.RunOK("app", "status", uuid, "--app="+p.Apps[0].Name)
	if !strings.Contains(r.Stdout, "oom-killed=true") {
		t.Errorf("app status: %s", r)
	}
}

// TestPodInteractive: --interactive gives the app a terminal on rkt's stdio.
func TestPodInteractive(t *testing.T) {
	pe := newPodEnv(t)
	r := pe.RunStdin([]byte("tty; echo answer-$((40+2))\nexit 6\n"),
		append(append([]string{"run"}, pe.netArgs()...), "--interactive", pe.image, "--exec=/bin/sh")...)
	if r.Code != 6 || !strings.Contains(r.Stdout, "answer-42") || !strings.Contains(r.Stdout, "/dev/pts/") {
		t.Errorf("interactive run: %s", r)
	}
	r = pe.RunOK(append(append([]string{"prepare"}, pe.netArgs()...), "--interactive", pe.image, "--exec=/bin/sh")...)
	uuid := strings.TrimSpace(r.Stdout)
	pe.TrackPod(uuid)
	r = pe.RunStdin([]byte("echo prepared-$((40+2))\nexit 7\n"), append(append([]string{"run-prepared"}, pe.netArgs()...), "--interactive", uuid)...)
	if r.Code != 7 || !strings.Contains(r.Stdout, "prepared-42") {
		t.Errorf("interactive run-prepared: %s", r)
	}
	// a pod prepared without a terminal is refused before it starts
	r = pe.RunOK(append(append([]string{"prepare"}, pe.netArgs()...), pe.image, "--exec=/bin/true")...)
	plain := strings.TrimSpace(r.Stdout)
	pe.TrackPod(plain)
	r = pe.Run(append(append([]string{"run-prepared"}, pe.netArgs()...), "--interactive", plain)...)
	if r.Code == 0 || !strings.Contains(r.Stderr, "not prepared with --interactive") {
		t.Errorf("interactive run-prepared of a pod without a terminal: %s", r)
	}
	if r := pe.RunOK("status", plain); !strings.Contains(r.Stdout, "state=prepared") {
		t.Errorf("the refused pod is no longer prepared: %s", r)
	}
}

// TestPodGCGracePeriod: exited pods are kept for the grace period.
func TestPodGCGracePeriod(t *testing.T) {
	pe := newPodEnv(t)
	uuidFile := pe.Root + "/uuid"
	pe.run("--uuid-file-save="+uuidFile, pe.image, "--exec=/bin/true")
	uuid := readFile(t, uuidFile)
	pe.TrackPod(uuid)
	pe.RunOK("gc", "--grace-period=1h")
	if p := pe.status(uuid); p.State != "exited garbage" {
		t.Fatalf("after gc with a grace period: %+v", p)
	}
	pe.RunOK("gc", "--grace-period=0s")
	if r := pe.Run("status", uuid); r.Code == 0 {
		t.Errorf("pod still there after gc --grace-period=0s: %s", r)
	}
}

// TestPodImageVolume mounts a second image's filesystem read-only into an
// app, whole and by sub path.
func TestPodImageVolume(t *testing.T) {
	pe := newPodEnv(t)
	reg := testutil.StartRegistry(t)
	data := reg.Push(t, "data:1", testutil.Image(t, testutil.ImageConfig{},
		testutil.Layer(t, testutil.Dir("content/"), testutil.File("content/hello.txt", "image-volume-data\n")),
		testutil.Layer(t, testutil.File("content/second.txt", "second-layer\n"))))
	r := pe.run(pe.image, "--mount=image="+data+",target=/iv", "--mount=image="+data+",target=/sub,subPath=content",
		"--exec=/bin/sh", "--", "-c", "cat /iv/content/hello.txt /sub/second.txt; touch /iv/x 2>/dev/null && echo writable || echo read-only")
	if r.Code != 0 || !strings.Contains(r.Stdout, "image-volume-data\nsecond-layer\nread-only") {
		t.Errorf("image volume: %s", r)
	}
}

// TestPodNamespaceFlags: --shared-pid, --host-pid, --sysctl, --pid=target.
func TestPodNamespaceFlags(t *testing.T) {
	pe := newPodEnv(t)
	// b counts the sleeps it sees once its own has ended: a's, only when
	// the PID namespace is shared
	for flag, want := range map[string]string{"--shared-pid": "b: 1", "--shared-pid=false": "b: 0"} {
		r := pe.run(flag, pe.image, "--name=a", "--exec=/bin/sh", "--", "-c", "sleep 2",
			"---", pe.image, "--name=b", "--exec=/bin/sh", "--", "-c", "sleep 0.5; ps -o comm | grep -c sleep")
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("%s: want %q: %s", flag, want, r)
		}
	}
	r := pe.run("--host-pid", pe.image, "--exec=/bin/sh", "--", "-c", "test -d /proc/1 && ! grep -q '^sh' /proc/1/comm && echo host-pid")
	if r.Code != 0 || !strings.Contains(r.Stdout, "host-pid") {
		t.Errorf("--host-pid: %s", r)
	}
	r = pe.run("--sysctl=net.ipv4.ip_unprivileged_port_start=80", "--sysctl=kernel.shm_rmid_forced=1", pe.image, "--exec=/bin/sh", "--", "-c",
		"cat /proc/sys/net/ipv4/ip_unprivileged_port_start /proc/sys/kernel/shm_rmid_forced")
	if r.Code != 0 || r.Stdout != "80\n1\n" {
		t.Errorf("--sysctl: %s", r)
	}
	sb := strings.TrimSpace(pe.RunOK(append([]string{"app", "sandbox"}, pe.netArgs()...)...).Stdout)
	pe.TrackPod(sb)
	pe.RunOK("app", "add", sb, pe.image, "--name=target", "--pid=container", "--exec=/bin/sh", "--", "-c", "trap 'exit 0' TERM; sleep 600 & wait")
	pe.RunOK("app", "start", sb, "--app=target")
	pe.RunOK("app", "add", sb, pe.image, "--name=joiner", "--pid=target:target", "--exec=/bin/sleep", "--", "600")
	pe.RunOK("app", "start", sb, "--app=joiner")
	r = pe.RunOK("app", "exec", sb, "--app=target", "--", "/bin/sh", "-c", "ps -o comm | grep -c sleep")
	if strings.TrimSpace(r.Stdout) != "2" {
		t.Errorf("--pid=target: the target should see the joiner's sleep: %s", r)
	}
	pe.RunOK("stop", "--timeout=1s", sb)
}

// TestPodVolumeReadOnlyAndPropagation: a read-only volume refuses writes;
// with propagation=rslave a mount made on the host under the volume's
// source after the pod started shows up in the app, with the default
// (private) it does not.
func TestPodVolumeReadOnlyAndPropagation(t *testing.T) {
	pe := newPodEnv(t)
	hostDir := t.TempDir()
	// the source must be a shared mount for propagation to reach the app
	for _, args := range [][]string{{"--bind", hostDir, hostDir}, {"--make-shared", hostDir}} {
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Fatalf("mount %v: %v: %s", args, err, out)
		}
	}
	t.Cleanup(func() { syscall.Unmount(hostDir, syscall.MNT_DETACH) })
	if err := os.MkdirAll(filepath.Join(hostDir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}

	r := pe.run("--volume=data,kind=host,source="+hostDir+",readOnly=true", pe.image, "--mount=volume=data,target=/data",
		"--exec=/bin/sh", "--", "-c", "touch /data/x 2>&1; echo done")
	if r.Code != 0 || !strings.Contains(r.Stdout, "Read-only file system") {
		t.Errorf("write to a read-only volume: %s", r)
	}

	start := func(propagation string) string {
		mount := "--mount=volume=data,target=/data"
		if propagation != "" {
			mount += ",propagation=" + propagation
		}
		return pe.runDetached("--volume=data,kind=host,source="+hostDir, pe.image, mount, "--exec=/bin/sleep", "--", "600")
	}
	slave, private := start("rslave"), start("")
	pe.waitState(slave, "running", 10*time.Second)
	pe.waitState(private, "running", 10*time.Second)
	sub := filepath.Join(hostDir, "sub")
	if out, err := exec.Command("mount", "-t", "tmpfs", "tmpfs", sub).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { syscall.Unmount(sub, syscall.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(sub, "late"), []byte("propagated"), 0o644); err != nil {
		t.Fatal(err)
	}
	for uuid, want := range map[string]string{slave: "propagated", private: "absent"} {
		r := pe.RunOK("enter", "--tty=false", uuid, "/bin/sh", "-c", "cat /data/sub/late 2>/dev/null || echo absent")
		if strings.TrimSpace(r.Stdout) != want {
			t.Errorf("pod %s sees %q in /data/sub, want %q", uuid, strings.TrimSpace(r.Stdout), want)
		}
	}
	pe.RunOK("stop", "--timeout=1s", slave, private)
}
