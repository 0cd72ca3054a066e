package tests

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rkt/rkt/tests/testutil"
)

// installTree runs `make install DESTDIR=<temp>` from the repository and
// returns DESTDIR and the installed files by base name, each with its
// directory's base name when two share a name (bin/rkt, completions/rkt). It
// reuses the build directory of $RKT_BIN when that is the repository's
// (nothing is rebuilt when it is up to date), else builds in a temp dir.
func installTree(t *testing.T) (string, map[string]string) {
	t.Helper()
	root, err := filepath.Abs("..")
	must(t, "repository root", err)
	if _, err := os.Stat(filepath.Join(root, "Makefile")); err != nil {
		t.Skipf("no Makefile at %s: %v", root, err)
	}
	build := t.TempDir()
	if bin := os.Getenv(testutil.EnvRKTBin); bin != "" && filepath.Base(filepath.Dir(bin)) == "bin" &&
		strings.HasPrefix(bin, root+string(filepath.Separator)) {
		build = filepath.Dir(filepath.Dir(bin))
	}
	dest := t.TempDir()
	cmd := exec.Command("make", "-C", root, "install", "DESTDIR="+dest, "BUILDDIR="+build)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	files := map[string]string{}
	filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files[filepath.Base(p)] = p
			files[filepath.Base(filepath.Dir(p))+"/"+filepath.Base(p)] = p
		}
		return nil
	})
	return dest, files
}

// TestInstall: `make install` installs man pages generated from the
// commands (rkt.1 named by the units' Documentation=, one page per
// command), bash and zsh completions, and units that systemd-analyze verify
// accepts: known keys only, executables present, man:rkt(1) resolvable.
// The socket unit removes its socket file when it stops.
func TestInstall(t *testing.T) {
	dest, files := installTree(t)
	installed := func(name string) string {
		t.Helper()
		p, ok := files[name]
		if !ok {
			t.Fatalf("make install did not install %s", name)
		}
		return p
	}

	t.Run("man pages", func(t *testing.T) {
		for _, page := range []string{"rkt.1", "rkt-run.1", "rkt-stop.1", "rkt-enter.1", "rkt-app-exec.1", "rkt-kubelet-service.1", "rkt-fetch.1"} {
			p := installed(page)
			if filepath.Base(filepath.Dir(p)) != "man1" {
				t.Errorf("%s installed at %s, not in a man1 directory", page, p)
			}
			title := strings.ToUpper(strings.TrimSuffix(page, ".1"))
			if b, _ := os.ReadFile(p); !strings.Contains(string(b), "\n.TH \""+title+"\" \"1\"") {
				t.Errorf("%s is not a section 1 man page: %.80q", page, b)
			}
		}
		if b, _ := os.ReadFile(installed("rkt-run.1")); !strings.Contains(string(b), "port") {
			t.Errorf("rkt-run.1 does not document --port")
		}
		if b, _ := os.ReadFile(installed("rkt.1")); strings.Contains(string(b), os.Getenv("HOME")+"/.config") {
			t.Errorf("rkt.1 names the builder's home as a default")
		}
		// the generator is not part of the installed binary
		out, err := exec.Command(installed("bin/rkt"), "gen-man", t.TempDir()).CombinedOutput()
		if err == nil {
			t.Errorf("the installed rkt has a gen-man command: %s", out)
		}
	})

	t.Run("completions", func(t *testing.T) {
		if b, _ := os.ReadFile(installed("_rkt")); !strings.HasPrefix(string(b), "#compdef rkt") {
			t.Errorf("zsh completion _rkt starts %.40q, want #compdef rkt", b)
		}
		if p := installed("_rkt"); !strings.HasSuffix(filepath.Dir(p), "share/zsh/vendor-completions") {
			t.Errorf("zsh completion at %s, want under share/zsh/vendor-completions", p)
		}
		if b, _ := os.ReadFile(installed("completions/rkt")); !strings.Contains(string(b), "bash completion") {
			t.Errorf("completions/rkt is not a bash completion: %.80q", b)
		}
	})

	t.Run("upgrade step", func(t *testing.T) {
		out, err := exec.Command(installed("rkt1-upgrade"), "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "rkt 1.x") {
			t.Errorf("rkt1-upgrade --help: %v\n%s", err, out)
		}
	})

	t.Run("socket unit", func(t *testing.T) {
		b, err := os.ReadFile(installed("rkt-kubelet-service.socket"))
		must(t, "read socket unit", err)
		if !strings.Contains(string(b), "\nRemoveOnStop=yes\n") {
			t.Errorf("socket unit has no RemoveOnStop=yes:\n%s", b)
		}
	})

	t.Run("systemd-analyze verify", func(t *testing.T) {
		analyze, err := exec.LookPath("systemd-analyze")
		if err != nil {
			t.Skip("systemd-analyze is not installed (Debian: apt-get install systemd)")
		}
		if _, err := exec.LookPath("man"); err != nil {
			t.Skip("man is not installed: systemd-analyze verify cannot check Documentation=man:rkt(1) (Debian: apt-get install man-db)")
		}
		hostUnits := "/usr/lib/systemd/system"
		if _, err := os.Stat(filepath.Join(hostUnits, "sysinit.target")); err != nil {
			t.Skipf("no systemd unit files on this host to verify against: %v", err)
		}
		// DESTDIR becomes a root with systemd's own units, as on a real
		// system, so that verify --root resolves the units' dependencies
		// and ExecStart= inside it.
		sys := filepath.Join(dest, "usr/lib/systemd")
		must(t, "mkdir", os.MkdirAll(sys, 0o755))
		if out, err := exec.Command("cp", "-a", hostUnits, sys).CombinedOutput(); err != nil {
			t.Fatalf("copy the host's systemd units: %v\n%s", err, out)
		}
		args := []string{"verify", "--root=" + dest}
		for _, u := range []string{"rkt-kubelet-service.socket", "rkt-kubelet-service.service", "rkt-gc.service", "rkt-gc.timer"} {
			args = append(args, installed(u))
		}
		cmd := exec.Command(analyze, args...)
		cmd.Env = append(os.Environ(), "MANPATH="+filepath.Dir(filepath.Dir(installed("rkt.1"))))
		out, err := cmd.CombinedOutput()
		// warnings (unknown keys, ...) do not change the exit code: fail on any output
		if err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("systemd-analyze %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
}
