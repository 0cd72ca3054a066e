package tests

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rkt/rkt/tests/testutil"
)

// TestDebRemoveReinstallNspawn: under a real systemd, `apt remove rkt`
// then `apt install` of the package again serves the CRI: the socket
// activates the service (postrm masked every unit on remove; postinst
// unmasked only the socket and the timer, so the first CRI call failed on a
// masked rkt-kubelet-service.service and rkt-gc.timer ran a masked
// rkt-gc.service).
func TestDebRemoveReinstallNspawn(t *testing.T) {
	rootfs := testutil.DebianRootfs(t)
	repo, err := filepath.Abs("..")
	must(t, "repository root", err)
	build := t.TempDir()
	makeIn(t, repo, "deb", "BUILDDIR="+build, "DEB_COMPRESS=gzip")
	debs, _ := filepath.Glob(filepath.Join(build, "rkt_*.deb"))
	if len(debs) != 1 {
		t.Fatalf("make deb made %v", debs)
	}
	m := testutil.NewMachine(t, rootfs)
	m.CopyFile(toolPath(t, "crictl"), "/usr/local/bin/crictl", 0o755)
	m.WriteFile("/etc/crictl.yaml", nspawnCrictlConf, 0o644)
	m.CopyFile(debs[0], "/root/rkt.deb", 0o644)
	m.Boot()
	m.MustExec("apt-get", "install", "-y", "--no-install-recommends", "/root/rkt.deb")
	m.MustExec("crictl", "version")
	m.MustExec("apt-get", "remove", "-y", "rkt")
	m.MustExec("apt-get", "install", "-y", "--no-install-recommends", "/root/rkt.deb")
	for _, u := range []string{"rkt-kubelet-service.service", "rkt-gc.service"} {
		if st, _ := m.Exec("systemctl", "show", "-p", "LoadState", "--value", u); strings.TrimSpace(st) == "masked" {
			t.Errorf("%s is masked after apt remove and apt install", u)
		}
	}
	if out, err := m.Exec("crictl", "--timeout=10s", "version"); err != nil {
		st, _ := m.Exec("systemctl", "status", "--no-pager", "rkt-kubelet-service.socket", "rkt-kubelet-service.service")
		t.Errorf("crictl version after apt remove and apt install: %v\n%s\n%s", err, out, st)
	}
	m.Exec("systemctl", "start", "rkt-gc.service")
	if st, _ := m.Exec("systemctl", "show", "-p", "LoadState", "--value", "rkt-gc.service"); strings.TrimSpace(st) == "masked" {
		t.Errorf("rkt-gc.service is masked: rkt-gc.timer runs nothing")
	}
	t.Logf("poweroff: %v", m.Poweroff().Round(time.Millisecond))
	m.CheckHost()
}
