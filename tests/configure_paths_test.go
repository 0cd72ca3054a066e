package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// configureTreeWithDist is configureTree plus the dist/ files that `make
// dist` substitutes (the units, tmpfiles.d and sysusers.d).
func configureTreeWithDist(t *testing.T) string {
	t.Helper()
	dir := configureTree(t)
	root, err := filepath.Abs("..")
	must(t, "repository root", err)
	ins, _ := filepath.Glob(filepath.Join(root, "dist/*/*.in"))
	for _, f := range ins {
		rel, _ := filepath.Rel(root, f)
		b, err := os.ReadFile(f)
		must(t, "read "+rel, err)
		must(t, "mkdir", os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		must(t, "write "+rel, os.WriteFile(filepath.Join(dir, rel), b, 0o644))
	}
	return dir
}

func runIn(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestDistFollowsPaths: the units, tmpfiles.d and sysusers.d files that
// make install installs name the paths of this configuration, also when the
// build directory holds them from an earlier one: after ./configure is run
// again with another prefix, and after `make install PREFIX=...` on the
// command line (README: `make install` honours PREFIX). They were rebuilt
// only when dist/*.in, config.mk.in or the Makefile changed, so the units
// ran /usr/local/bin/rkt where /usr/bin/rkt was installed.
func TestDistFollowsPaths(t *testing.T) {
	dir := configureTreeWithDist(t)
	unit := filepath.Join(dir, "build/dist/systemd/rkt-kubelet-service.service")
	execStart := func() string {
		t.Helper()
		b, err := os.ReadFile(unit)
		must(t, "read unit", err)
		m := regexp.MustCompile(`(?m)^ExecStart=(\S+)`).FindStringSubmatch(string(b))
		if m == nil {
			t.Fatalf("no ExecStart= in\n%s", b)
		}
		return m[1]
	}
	runIn(t, dir, nil, "./configure")
	runIn(t, dir, nil, "make", "dist")
	if got := execStart(); got != "/usr/local/bin/rkt" {
		t.Fatalf("ExecStart=%s after ./configure, want /usr/local/bin/rkt", got)
	}
	runIn(t, dir, nil, "./configure", "--prefix=/usr", "--sysconfdir=/etc")
	runIn(t, dir, nil, "make", "dist")
	if got := execStart(); got != "/usr/bin/rkt" {
		t.Errorf("ExecStart=%s after ./configure --prefix=/usr, want /usr/bin/rkt", got)
	}
	runIn(t, dir, nil, "make", "dist", "PREFIX=/opt/rkt")
	if got := execStart(); got != "/opt/rkt/bin/rkt" {
		t.Errorf("ExecStart=%s after make dist PREFIX=/opt/rkt, want /opt/rkt/bin/rkt", got)
	}
}

// TestConfigureLibdirSystemdFiles: with the --libdir a distribution's
// configure macro passes (Debian's dh_auto_configure: a multiarch
// directory; Fedora's %configure: /usr/lib64), the tmpfiles.d and
// sysusers.d files still go where systemd-tmpfiles and systemd-sysusers
// read them (PREFIX/lib/tmpfiles.d, PREFIX/lib/sysusers.d): they went to
// LIBDIR/tmpfiles.d, which neither reads, so the rkt group and
// /var/lib/rkt were never created.
func TestConfigureLibdirSystemdFiles(t *testing.T) {
	dir := configureTree(t)
	for _, libdir := range []string{`${prefix}/lib/x86_64-linux-gnu`, "/usr/lib64"} {
		runIn(t, dir, nil, "./configure", "--prefix=/usr", "--sysconfdir=/etc", "--libdir="+libdir)
		out := runIn(t, dir, nil, "make", "-n", "install", "DESTDIR=/DEST")
		for _, want := range []string{" /DEST/usr/lib/tmpfiles.d/rkt.conf\n", " /DEST/usr/lib/sysusers.d/rkt.conf\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("--libdir=%s: make -n install does not install%s", libdir, strings.TrimSuffix(want, "\n"))
			}
		}
	}
}

// TestConfigureGoOutsidePath: configure looks for go in $PATH and in
// /usr/local/go/bin (where Go's tarball installs it). When it finds it only
// there, config.mk must name that go, not "go", which make then does not
// find ("go: No such file or directory" after a configure that succeeded).
func TestConfigureGoOutsidePath(t *testing.T) {
	const goroot = "/usr/local/go/bin"
	if _, err := os.Stat(filepath.Join(goroot, "go")); err != nil {
		t.Skipf("no %s/go: %v", goroot, err)
	}
	var path []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, "go")); err == nil {
			continue
		}
		path = append(path, d)
	}
	env := append(os.Environ(), "PATH="+strings.Join(path, ":"))
	env = append(env, "GO=") // no GO from the environment
	dir := configureTree(t)
	runIn(t, dir, env, "./configure")
	b, err := os.ReadFile(filepath.Join(dir, "config.mk"))
	must(t, "read config.mk", err)
	m := regexp.MustCompile(`(?m)^GO\s*=\s*(.*)$`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("no GO in config.mk:\n%s", b)
	}
	cmd := exec.Command("sh", "-c", m[1]+" version")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("config.mk has GO = %s, which make cannot run with PATH=%s: %v\n%s", m[1], strings.Join(path, ":"), err, out)
	}
}
