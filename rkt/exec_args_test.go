package main

import (
	"reflect"
	"testing"
)

// TestExecTTYFlag: `--tty` without a value (as the usage line
// "exec UUID --app=NAME [--tty] [--] CMD" shows it) asks for a terminal;
// it does not take the next word ("--" or the command) as its value.
// Values other than true, false and auto are refused.
func TestExecTTYFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		tty     string
		command []string
	}{
		{[]string{"uuid", "--app=web", "--tty", "--", "/bin/sh"}, "true", []string{"uuid", "/bin/sh"}},
		{[]string{"uuid", "--app=web", "--tty", "/bin/sh"}, "true", []string{"uuid", "/bin/sh"}},
		{[]string{"uuid", "--app=web", "--tty=false", "/bin/sh"}, "false", []string{"uuid", "/bin/sh"}},
	} {
		cmd := appExecCmd()
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		got, err := execArgs(cmd, cmd.Flags().Args())
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if tty := cmd.Flags().Lookup("tty").Value.String(); tty != tc.tty || !reflect.DeepEqual(got, tc.command) {
			t.Errorf("%q: --tty=%q, command %q; want --tty=%q, command %q", tc.args, tty, got, tc.tty, tc.command)
		}
	}
	cmd := appExecCmd()
	if err := cmd.ParseFlags([]string{"uuid", "--app=web", "--tty=yes", "/bin/sh"}); err == nil {
		if _, err := execArgs(cmd, cmd.Flags().Args()); err == nil {
			t.Errorf("--tty=yes accepted (and taken for false)")
		}
	}
}
