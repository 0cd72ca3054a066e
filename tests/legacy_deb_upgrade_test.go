package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rkt/rkt/tests/testutil"
)

// rkt1Stub stands in for rkt 1.30's binary (not downloaded): its services
// run until stopped, its other commands succeed.
const rkt1Stub = `#!/bin/sh
case "$1" in
api-service|metadata-service) exec sleep infinity ;;
esac
exit 0
`

// rkt1Tmpfiles is rkt 1.30's dist/init/systemd/tmpfiles.d/rkt.conf.
const rkt1Tmpfiles = `d /var/lib/rkt 2750 root rkt
d /var/lib/rkt/tmp 2750 root rkt
d /var/lib/rkt/cas 2770 root rkt
d /var/lib/rkt/cas/db 2770 root rkt
f /var/lib/rkt/cas/db/ql.db 0660 root rkt
f /var/lib/rkt/cas/db/.34a8b4c1ad933745146fdbfef3073706ee571625 0660 root rkt
d /var/lib/rkt/cas/imagelocks 2770 root rkt
d /var/lib/rkt/cas/imageManifest 2770 root rkt
d /var/lib/rkt/cas/blob 2770 root rkt
d /var/lib/rkt/cas/tmp 2770 root rkt
d /var/lib/rkt/cas/tree 2700 root rkt
d /var/lib/rkt/cas/treestorelocks 2700 root rkt
d /var/lib/rkt/locks 2750 root rkt
d /var/lib/rkt/pods 2750 root rkt
d /var/lib/rkt/pods/embryo 2750 root rkt
d /var/lib/rkt/pods/prepare 2750 root rkt
d /var/lib/rkt/pods/prepared 2750 root rkt
d /var/lib/rkt/pods/run 2750 root rkt
d /var/lib/rkt/pods/exited-garbage 2750 root rkt
d /var/lib/rkt/pods/garbage 2750 root rkt
d /etc/rkt 2775 root rkt-admin
`

// rkt1Postinst does what rkt 1.30's package did on install: its groups
// (dist/scripts/setup-data-dir.sh), its directories, its units enabled
// and started.
const rkt1Postinst = `#!/bin/sh
set -e
if [ "$1" = configure ]; then
	getent group rkt-admin >/dev/null || groupadd --system rkt-admin
	getent group rkt >/dev/null || groupadd --system rkt
	systemd-tmpfiles --create rkt.conf || true
	for u in rkt-api.service rkt-api-tcp.socket rkt-metadata.socket rkt-gc.timer; do
		deb-systemd-helper enable "$u"
	done
	if [ -d /run/systemd/system ]; then
		systemctl daemon-reload
		deb-systemd-invoke start rkt-api-tcp.socket rkt-metadata.socket rkt-gc.timer
	fi
fi
`

// buildRKT1Deb makes a package "rkt" 1.30.0 with rkt 1.30's units,
// tmpfiles.d and install steps around rkt1Stub.
func buildRKT1Deb(t *testing.T, dir, arch string) string {
	t.Helper()
	root := filepath.Join(dir, "rkt1")
	files := map[string]string{
		"usr/bin/rkt":                  rkt1Stub,
		"usr/lib/tmpfiles.d/rkt.conf":  rkt1Tmpfiles,
		"DEBIAN/postinst":              rkt1Postinst,
		"usr/share/doc/rkt/README.txt": "rkt 1.30 (a stand-in)\n",
		"DEBIAN/control": "Package: rkt\nVersion: 1.30.0+dfsg-1\nArchitecture: " + arch +
			"\nMaintainer: rkt tests <rkt@example.com>\nDescription: rkt 1.30 stand-in\n rkt 1.30's units and files around a stub.\n",
	}
	for name, body := range rkt1Units {
		files["lib/systemd/system/"+name] = body
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if name == "usr/bin/rkt" || name == "DEBIAN/postinst" {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	deb := filepath.Join(dir, "rkt_1.30.0+dfsg-1_"+arch+".deb")
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb: %v\n%s", err, out)
	}
	return deb
}

// TestRKT1PackageUpgrade: on a node where rkt 1.30's package runs (groups
// rkt and rkt-admin, /etc/rkt 2775 root:rkt-admin, rkt-api-tcp.socket with
// rkt-api.service running, rkt-metadata.socket and rkt-gc.timer enabled, a
// data dir in rkt 1.x's layout), `apt install` of this package (systemd
// 252 in nspawn): rkt 1.x's services are stopped and disabled and none
// failed, rkt-kubelet-service.socket and rkt-gc.timer are enabled and
// active, the groups and /etc/rkt are kept, rkt 1.x's images are imported
// and crictl runs a pod of one on the default network, and the machine
// powers off cleanly.
func TestRKT1PackageUpgrade(t *testing.T) {
	rootfs := testutil.DebianRootfs(t)
	arch, err := exec.Command("dpkg", "--print-architecture").Output()
	must(t, "dpkg --print-architecture", err)
	repo, err := filepath.Abs("..")
	must(t, "repository root", err)
	build := t.TempDir()
	start := time.Now()
	makeIn(t, repo, "deb", "BUILDDIR="+build, "DEB_COMPRESS=gzip")
	t.Logf("make deb: %v", time.Since(start).Round(time.Millisecond))
	debs, _ := filepath.Glob(filepath.Join(build, "rkt_*.deb"))
	if len(debs) != 1 {
		t.Fatalf("make deb made %v, want one rkt_*.deb in %s", debs, build)
	}
	old := buildRKT1Deb(t, t.TempDir(), strings.TrimSpace(string(arch)))

	m := testutil.NewMachine(t, rootfs)
	m.CopyFile(toolPath(t, "crictl"), "/usr/local/bin/crictl", 0o755)
	m.WriteFile("/etc/crictl.yaml", nspawnCrictlConf, 0o644)
	m.CopyFile(old, "/root/rkt1.deb", 0o644)
	m.CopyFile(debs[0], "/root/rkt.deb", 0o644)
	n := buildRKT1Node(t, m.DataDir)
	// rkt 1.x's busybox named as the image the pods of runCrictlPod use
	// (an ACI name with no host goes under localhost/)
	putRKT1ACI(t, m.DataDir, map[string]any{"acKind": "ImageManifest", "acVersion": "0.8.11", "name": "busybox", "labels": aciLabels("1"),
		"app": map[string]any{"exec": []string{"/bin/sh"}, "user": "0", "group": "0",
			"environment": []map[string]string{{"name": "PATH", "value": "/usr/sbin:/usr/bin:/sbin:/bin"}}}},
		testutil.BusyboxEntries(t))
	t.Logf("boot: %v", m.Boot().Round(time.Millisecond))

	m.MustExec("apt-get", "install", "-y", "--no-install-recommends", "/root/rkt1.deb")
	m.MustExec("bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/15441") // activates rkt-api.service
	for _, u := range []string{"rkt-api-tcp.socket", "rkt-api.service", "rkt-metadata.socket", "rkt-gc.timer"} {
		checkUnit(t, m, u, "ActiveState=active")
	}
	if out := m.MustExec("stat", "-c", "%a %U %G", "/etc/rkt"); out != "2775 root rkt-admin" {
		t.Fatalf("rkt 1.x's /etc/rkt: %s", out)
	}

	start = time.Now()
	out := m.MustExec("apt-get", "install", "-y", "--no-install-recommends", "/root/rkt.deb")
	t.Logf("apt install (upgrade from rkt 1.30): %v\n%s", time.Since(start).Round(time.Millisecond), out)
	for _, u := range []string{"rkt-api-tcp.socket", "rkt-api.service", "rkt-metadata.socket", "rkt-metadata.service"} {
		if st, _ := m.Exec("systemctl", "is-active", u); strings.TrimSpace(st) != "inactive" {
			t.Errorf("%s is %q after the upgrade, want inactive", u, strings.TrimSpace(st))
		}
		if st, _ := m.Exec("systemctl", "is-enabled", u); strings.TrimSpace(st) == "enabled" {
			t.Errorf("%s is still enabled after the upgrade", u)
		}
	}
	if l, _ := m.Exec("ss", "-Htln", "sport = :15441"); strings.TrimSpace(l) != "" {
		t.Errorf("something still listens on rkt 1.x's API port:\n%s", l)
	}
	for _, u := range []string{"rkt-kubelet-service.socket", "rkt-gc.timer"} {
		if st := m.MustExec("systemctl", "is-enabled", u); st != "enabled" {
			t.Errorf("%s is %s after the upgrade, want enabled", u, st)
		}
		checkUnit(t, m, u, "ActiveState=active")
	}
	m.MustExec("test", "-L", "/etc/systemd/system/timers.target.wants/rkt-gc.timer")
	if _, err := m.Exec("test", "-e", "/etc/systemd/system/multi-user.target.wants/rkt-gc.timer"); err == nil {
		t.Errorf("rkt-gc.timer is still wanted by multi-user.target")
	}
	m.MustExec("getent", "group", "rkt")
	m.MustExec("getent", "group", "rkt-admin")
	if out := m.MustExec("stat", "-c", "%a %U %G", "/etc/rkt"); out != "2775 root rkt-admin" {
		t.Errorf("/etc/rkt after the upgrade: %s, want rkt 1.x's 2775 root rkt-admin", out)
	}
	// a unit left running `rkt api-service` would fail once, saying why
	if _, err := m.Exec("rkt", "api-service"); err == nil || !strings.Contains(err.Error(), "exit status 78") || !strings.Contains(err.Error(), "kubelet-service") {
		t.Errorf("rkt api-service after the upgrade: %v", err)
	}
	images := m.MustExec("crictl", "images")
	for _, want := range []string{"localhost/busybox", "example.com/busybox", "example.com/motd"} {
		if !strings.Contains(images, want) {
			t.Errorf("crictl images after the upgrade lacks %s:\n%s", want, images)
		}
	}
	pod, ctr := runCrictlPod(t, m, "upgraded", false)
	if r, _ := m.Exec("sh", "-c", "rkt list 2>&1 >/dev/null"); !strings.Contains(r, "pods of rkt 1.x") {
		t.Errorf("rkt list does not mention rkt 1.x's pods: %s", r)
	}
	m.MustExec("crictl", "stop", ctr)
	m.MustExec("crictl", "rm", ctr)
	m.MustExec("crictl", "stopp", pod)
	m.MustExec("crictl", "rmp", pod)
	// rkt 1.x's data goes when asked; the imported images stay
	m.MustExec("rkt", "migrate", "--remove-legacy")
	if _, err := os.Stat(filepath.Join(m.DataDir, "cas/db/ql.db")); err == nil {
		t.Errorf("rkt migrate --remove-legacy left rkt 1.x's index")
	}
	if _, err := os.Stat(filepath.Join(m.DataDir, "pods/run", n.running)); err == nil {
		t.Errorf("rkt migrate --remove-legacy left rkt 1.x's pod %s", n.running)
	}
	if images := m.MustExec("crictl", "images"); !strings.Contains(images, "localhost/busybox") {
		t.Errorf("imported images gone with rkt 1.x's data:\n%s", images)
	}
	checkNoFailedUnits(t, m)
	t.Logf("poweroff: %v", m.Poweroff().Round(time.Millisecond))
	m.CheckHost()
}
