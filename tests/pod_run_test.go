package tests

import (
	"strings"
	"testing"
)

// TestPodRunForeground runs an app in the foreground: its output reaches
// rkt's stdout/stderr and rkt exits with the app's exit code.
func TestPodRunForeground(t *testing.T) {
	pe := newPodEnv(t)
	r := pe.run("--uuid-file-save="+pe.Root+"/uuid", pe.image, "--exec=/bin/sh", "--", "-c", "echo out; echo err >&2; exit 7")
	if r.Code != 7 {
		t.Fatalf("exit code %d, want 7: %s", r.Code, r)
	}
	if !strings.Contains(r.Stdout, "out\n") || !strings.Contains(r.Stderr, "err\n") {
		t.Errorf("app output not shown: %s", r)
	}
	p := pe.status(readFile(t, pe.Root+"/uuid"))
	if p.State != "exited" || p.ExitCode != 7 || len(p.Apps) != 1 || p.Apps[0].ExitCode != 7 {
		t.Errorf("status after exit: %+v", p)
	}
}
