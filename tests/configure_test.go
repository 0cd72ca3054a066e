package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// configureTree copies what ./autogen.sh, ./configure and `make -n
// install` read (as in the working tree) to a temp dir and runs
// ./autogen.sh there.
func configureTree(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"autoreconf", "pkg-config", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (make deps installs it)", tool)
		}
	}
	root, err := filepath.Abs("..")
	must(t, "repository root", err)
	dir := t.TempDir()
	for _, f := range []string{"configure.ac", "autogen.sh", "config.mk.in", "Makefile", "go.mod", "rkt/main.go"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		must(t, "read "+f, err)
		must(t, "mkdir", os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755))
		must(t, "write "+f, os.WriteFile(filepath.Join(dir, f), b, 0o755))
	}
	if out, err := exec.Command(filepath.Join(dir, "autogen.sh")).CombinedOutput(); err != nil {
		t.Fatalf("./autogen.sh: %v\n%s", err, out)
	}
	return dir
}

// TestConfigureRkt1Options: ./configure accepts the options that rkt 1.x's
// Debian and Fedora packages pass (flavors, stage1 image locations, TPM,
// journal, CoreOS PXE image, functional tests, ...). It maps the stage1
// location options to the stage1 path, prints one notice per ignored
// option, fails on none, and its summary shows expanded paths (no
// ${prefix}, no $(LIBDIR)), the ones make install then uses.
func TestConfigureRkt1Options(t *testing.T) {
	dir := configureTree(t)
	goDir := ""
	if p, err := exec.LookPath("go"); err == nil {
		if p, err = filepath.EvalSymlinks(p); err == nil {
			goDir = filepath.Dir(filepath.Dir(p)) // GOROOT: GOROOT/bin/go
		}
	}
	cases := []struct {
		name    string
		args    []string
		ignored []string          // options that must each get a notice
		summary map[string]string // summary line -> value
		stage1  string            // installed stage1 path
		man1    string
	}{{
		// dh_auto_configure's options (literal ${prefix}) and rkt 1.30's debian/rules
		name: "debian",
		args: []string{"--build=x86_64-linux-gnu", "--prefix=/usr", `--includedir=${prefix}/include`,
			`--mandir=${prefix}/share/man`, `--infodir=${prefix}/share/info`, "--sysconfdir=/etc",
			"--localstatedir=/var", "--disable-option-checking", "--disable-silent-rules",
			`--libdir=${prefix}/lib/x86_64-linux-gnu`, "--runstatedir=/run", "--disable-maintainer-mode",
			"--disable-dependency-tracking",
			"--with-stage1-flavors=coreos,fly,host", "--with-stage1-default-flavor=coreos",
			"--with-stage1-default-images-directory=/usr/lib/rkt/stage1-images",
			"--with-stage1-default-location=/usr/lib/rkt/stage1-images/stage1-coreos.aci",
			"--with-coreos-local-pxe-image-path=debian/coreos_production_pxe_image.cpio.gz",
			"--with-coreos-local-pxe-image-systemd-version=v233",
			"--enable-tpm=no", "--enable-sdjournal", "--enable-functional-tests=no",
			"--enable-insecure-go", "--enable-incremental-build=no"},
		ignored: []string{"--with-stage1-flavors=coreos,fly,host", "--with-stage1-default-flavor=coreos",
			"--with-coreos-local-pxe-image-path=debian/coreos_production_pxe_image.cpio.gz",
			"--with-coreos-local-pxe-image-systemd-version=v233", "--enable-tpm=no", "--enable-sdjournal=yes",
			"--enable-functional-tests=no", "--enable-insecure-go=yes", "--enable-incremental-build=no"},
		summary: map[string]string{
			"prefix":           "/usr",
			"rkt binary":       "/usr/bin/rkt",
			"stage1 path":      "/usr/lib/rkt/stage1-images/stage1",
			"config dir":       "/etc/rkt",
			"CNI config dir":   "/etc/rkt/net.d",
			"man pages":        "/usr/share/man/man1",
			"systemd unit dir": "", // pkg-config's or LIBDIR's, expanded
		},
		stage1: "/usr/lib/rkt/stage1-images/stage1",
		man1:   "/usr/share/man/man1",
	}, {
		// %configure's options and rkt 1.x's Fedora spec
		name: "fedora",
		args: []string{"--build=x86_64-redhat-linux-gnu", "--host=x86_64-redhat-linux-gnu",
			"--program-prefix=", "--disable-dependency-tracking", "--prefix=/usr", "--exec-prefix=/usr",
			"--bindir=/usr/bin", "--sbindir=/usr/sbin", "--sysconfdir=/etc", "--datadir=/usr/share",
			"--includedir=/usr/include", "--libdir=/usr/lib64", "--libexecdir=/usr/libexec",
			"--localstatedir=/var", "--sharedstatedir=/var/lib", "--mandir=/usr/share/man",
			"--infodir=/usr/share/info",
			"--with-stage1-flavors=coreos,kvm", "--with-stage1-flavors-version-override=1.30.0-1",
			"--with-stage1-default-location=/usr/libexec/rkt/stage1-coreos.aci",
			"--with-stage1-default-images-directory=/usr/libexec/rkt",
			"--with-stage1-default-name=coreos.com/rkt/stage1-coreos", "--with-stage1-default-version=1.30.0",
			"--with-stage1-kvm-hypervisors=qemu",
			"--disable-tpm", "--with-stage1-systemd-src=/builddir/systemd-233",
			"--with-stage1-systemd-revision=v233", "--with-stage1-systemd-version=v233",
			"--with-go-path=" + goDir, "GIT=true", "WGET=true"},
		ignored: []string{"--with-stage1-flavors=coreos,kvm", "--with-stage1-flavors-version-override=1.30.0-1",
			"--with-stage1-default-name=coreos.com/rkt/stage1-coreos", "--with-stage1-default-version=1.30.0",
			"--with-stage1-kvm-hypervisors=qemu", "--enable-tpm=no",
			"--with-stage1-systemd-src=/builddir/systemd-233", "--with-stage1-systemd-revision=v233",
			"--with-stage1-systemd-version=v233",
			// the location option gives the path, so the directory is not used
			"--with-stage1-default-images-directory=/usr/libexec/rkt"},
		summary: map[string]string{
			"prefix":      "/usr",
			"rkt binary":  "/usr/bin/rkt",
			"stage1 path": "/usr/libexec/rkt/stage1",
			"man pages":   "/usr/share/man/man1",
			"go":          filepath.Join(goDir, "bin/go"),
		},
		stage1: "/usr/libexec/rkt/stage1",
		man1:   "/usr/share/man/man1",
	}, {
		// the images directory alone: the stage1 goes into it; a URL
		// location is not a path
		name: "images-directory",
		args: []string{"--prefix=/opt/rkt", "--with-stage1-default-images-directory=/opt/rkt/stage1-images",
			"--with-stage1-default-location=https://example.com/stage1-coreos.aci"},
		ignored: []string{"--with-stage1-default-location=https://example.com/stage1-coreos.aci"},
		summary: map[string]string{"prefix": "/opt/rkt", "stage1 path": "/opt/rkt/stage1-images/stage1", "man pages": "/opt/rkt/share/man/man1"},
		stage1:  "/opt/rkt/stage1-images/stage1",
		man1:    "/opt/rkt/share/man/man1",
	}, {
		// no options: the defaults, expanded
		name: "defaults",
		summary: map[string]string{
			"prefix":         "/usr/local",
			"rkt binary":     "/usr/local/bin/rkt",
			"stage1 path":    "/usr/local/lib/rkt/stage1",
			"config dir":     "/usr/local/etc/rkt",
			"CNI config dir": "/usr/local/etc/rkt/net.d",
			"man pages":      "/usr/local/share/man/man1",
		},
		stage1: "/usr/local/lib/rkt/stage1",
		man1:   "/usr/local/share/man/man1",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "fedora" && goDir == "" {
				t.Skip("no go command to pass as --with-go-path")
			}
			cmd := exec.Command("./configure", c.args...)
			cmd.Dir = dir
			b, err := cmd.CombinedOutput()
			out := string(b)
			if err != nil {
				t.Fatalf("./configure %s: %v\n%s", strings.Join(c.args, " "), err, out)
			}
			for _, bad := range []string{"unrecognized option", "command not found", "WARNING", "error"} {
				if strings.Contains(out, bad) {
					t.Errorf("configure printed %q:\n%s", bad, out)
				}
			}
			for _, opt := range c.ignored {
				if !regexp.MustCompile(`(?m)^configure: rkt 1\.x option ` + regexp.QuoteMeta(opt) + `: ignored: \S`).MatchString(out) {
					t.Errorf("no notice that %s is ignored:\n%s", opt, out)
				}
			}
			_, sum, ok := strings.Cut(out, " configured:\n")
			if !ok {
				t.Fatalf("no summary:\n%s", out)
			}
			if strings.Contains(sum, "$") {
				t.Errorf("summary has unexpanded variables:\n%s", sum)
			}
			got := map[string]string{}
			for _, l := range strings.Split(sum, "\n") {
				if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
					got[k] = strings.TrimSpace(v)
				}
			}
			for k, want := range c.summary {
				if v, ok := got[k]; !ok || (want == "" && !strings.HasPrefix(v, "/")) || (want != "" && v != want) {
					t.Errorf("summary %s: %q, want %q\n%s", k, v, want, sum)
				}
			}
			// make install uses the same paths
			mk := exec.Command("make", "-n", "install", "DESTDIR=/DEST")
			mk.Dir = dir
			b, err = mk.CombinedOutput()
			if err != nil {
				t.Fatalf("make -n install: %v\n%s", err, b)
			}
			for _, want := range []string{"build/bin/stage1 /DEST" + c.stage1 + "\n", "/DEST" + c.man1 + "/\n", "Stage1Path=" + c.stage1 + " "} {
				if !strings.Contains(string(b), want) {
					t.Errorf("make -n install does not contain %q:\n%s", want, b)
				}
			}
		})
	}
}
