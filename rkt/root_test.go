package main

import (
	"testing"
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
