package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rkt/rkt/pkg/schema"
)

// TestCommandTree: every registered command builds under its name, a run
// that names one builds only it, and a run that names none builds all.
func TestCommandTree(t *testing.T) {
	all := rootCmdFor(nil).Commands()
	if len(all) != len(subcommands) {
		t.Fatalf("%d commands built, %d registered", len(all), len(subcommands))
	}
	for _, c := range subcommands {
		if got := c.build().Name(); got != c.name {
			t.Errorf("command registered as %q builds %q", c.name, got)
		}
	}
	for _, tc := range []struct {
		args []string
		want string // "" = all
	}{
		{[]string{"kubelet-service", "--socket=/x"}, "kubelet-service"},
		{[]string{"--dir", "/var/lib/rkt", "--debug", "kubelet-service"}, "kubelet-service"},
		{[]string{"--dir=run", "fetch", "busybox"}, "fetch"},
		{[]string{"--dir", "run"}, ""},
		{[]string{"image", "ls"}, "image"},
		{[]string{"help", "run"}, ""},
		{[]string{"ls"}, ""}, // an alias: cobra resolves it in the whole tree
		{[]string{"nosuch"}, ""},
		{nil, ""},
	} {
		cmds := rootCmdFor(tc.args).Commands()
		switch {
		case tc.want == "" && len(cmds) != len(subcommands):
			t.Errorf("%q: %d commands built, want all %d", tc.args, len(cmds), len(subcommands))
		case tc.want != "" && (len(cmds) != 1 || cmds[0].Name() != tc.want):
			t.Errorf("%q: built %v, want only %s", tc.args, cmds, tc.want)
		}
	}
	if n := len(rootCmdFor([]string{"image"}).Commands()[0].Commands()); n != len(imageSubcommands) {
		t.Errorf("rkt image has %d subcommands, want %d", n, len(imageSubcommands))
	}
}

// A broken paths.d (a relative data dir) fails the commands that use the
// data directory, with what is wrong, and not version.
func TestBrokenPathsD(t *testing.T) {
	local := t.TempDir()
	if err := os.MkdirAll(filepath.Join(local, "paths.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(local, "paths.d", "paths.json"), []byte(`{"rktKind":"paths","rktVersion":"v1","data":"relative/dir"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) error {
		root := rootCmdFor(args)
		root.SetArgs(append([]string{"--local-config=" + local, "--system-config=" + t.TempDir()}, args...))
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		return root.Execute()
	}
	if err := run("version"); err != nil {
		t.Errorf("rkt version with a broken paths.d: %v", err)
	}
	if err := run("list"); err == nil || !strings.Contains(err.Error(), "paths.d") {
		t.Errorf("rkt list with a broken paths.d: %v, want an error naming paths.d", err)
	}
}

// TestDisplayNamePrintable: a display name with control characters (a CRI
// client's pod name) is printed quoted, never raw to the terminal.
func TestDisplayNamePrintable(t *testing.T) {
	for in, want := range map[string]string{
		"default/web":         "default/web",
		"ns/\x1b]0;owned\x07": `"ns/\x1b]0;owned\a"`,
		"":                    "-",
	} {
		if got := displayName(map[string]string{schema.AnnotationDisplayName: in}); got != want {
			t.Errorf("displayName(%q) = %s, want %s", in, got, want)
		}
	}
}
