package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// debScriptsRoot makes a root for the package's maintainer scripts run with
// DPKG_ROOT (deb-systemd-helper works inside it): the four units in
// /lib/systemd/system, and stubs of the commands the scripts run on the
// host (systemd-sysusers, systemd-tmpfiles, systemctl, deb-systemd-invoke),
// so that nothing outside the root is changed. It returns the root and the
// environment to run the scripts in.
func debScriptsRoot(t *testing.T) (string, []string) {
	t.Helper()
	if _, err := exec.LookPath("deb-systemd-helper"); err != nil {
		t.Skip("deb-systemd-helper is not installed (Debian: init-system-helpers)")
	}
	// postinst runs rkt1-upgrade on the host when it sees rkt 1.x's data
	// there: not here
	for _, p := range []string{"/var/lib/rkt/cas/db/ql.db", "/var/lib/rkt/pods/embryo"} {
		if _, err := os.Stat(p); err == nil {
			t.Skipf("%s exists: postinst would run rkt1-upgrade on this host", p)
		}
	}
	root := t.TempDir()
	units := filepath.Join(root, "lib/systemd/system")
	must(t, "mkdir", os.MkdirAll(units, 0o755))
	for _, u := range []string{"rkt-kubelet-service.socket", "rkt-kubelet-service.service", "rkt-gc.service", "rkt-gc.timer"} {
		src := filepath.Join("..", "dist/systemd", u)
		b, err := os.ReadFile(src + ".in")
		if os.IsNotExist(err) {
			b, err = os.ReadFile(src)
		}
		must(t, "read "+u, err)
		must(t, "write "+u, os.WriteFile(filepath.Join(units, u), b, 0o644))
	}
	stubs := t.TempDir()
	for _, c := range []string{"systemd-sysusers", "systemd-tmpfiles", "systemctl", "deb-systemd-invoke"} {
		must(t, "stub "+c, os.WriteFile(filepath.Join(stubs, c), []byte("#!/bin/sh\nexit 0\n"), 0o755))
	}
	env := append(os.Environ(), "DPKG_ROOT="+root, "DPKG_MAINTSCRIPT_PACKAGE=rkt", "PATH="+stubs+":"+os.Getenv("PATH"))
	return root, env
}

func runDebScript(t *testing.T, env []string, script string, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join("..", "dist/deb", script), args...)
	cmd.Env = append(env, "DPKG_MAINTSCRIPT_NAME="+script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", script, strings.Join(args, " "), err, out)
	}
}

// TestDebRemoveReinstall: `apt remove rkt` then `apt install rkt` again
// (the package in config-files state) leaves none of its units masked. The
// postrm masks every unit on remove, as dh_installsystemd does; the
// postinst must unmask every one it masked, else the socket-activated
// service (and rkt-gc.service under its timer) stays masked: the socket
// listens, the first CRI call fails.
func TestDebRemoveReinstall(t *testing.T) {
	root, env := debScriptsRoot(t)
	const version = "2.0.0~git700.0000000"
	runDebScript(t, env, "postinst", "configure", "")
	// apt remove: prerm, the unit files go, postrm
	runDebScript(t, env, "prerm", "remove")
	units, _ := filepath.Glob(filepath.Join(root, "lib/systemd/system/rkt*"))
	saved := map[string][]byte{}
	for _, u := range units {
		b, err := os.ReadFile(u)
		must(t, "read unit", err)
		saved[u] = b
		must(t, "remove unit", os.Remove(u))
	}
	runDebScript(t, env, "postrm", "remove")
	// apt install again: the files come back, postinst configure with the
	// version last configured
	for u, b := range saved {
		must(t, "restore unit", os.WriteFile(u, b, 0o644))
	}
	runDebScript(t, env, "postinst", "configure", version)
	for u := range saved {
		mask := filepath.Join(root, "etc/systemd/system", filepath.Base(u))
		if l, err := os.Readlink(mask); err == nil && l == "/dev/null" {
			t.Errorf("%s is still masked after remove and reinstall (%s -> /dev/null)", filepath.Base(u), mask)
		}
	}
	for _, l := range []string{"sockets.target.wants/rkt-kubelet-service.socket", "timers.target.wants/rkt-gc.timer"} {
		if _, err := os.Lstat(filepath.Join(root, "etc/systemd/system", l)); err != nil {
			t.Errorf("%s not enabled after reinstall: %v", l, err)
		}
	}
}
