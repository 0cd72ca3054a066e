package main

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
)

// TestExecUmaskAsApp: an exec'd process gets the umask of the app's own
// process (libcontainer gives the app 0022 when the spec has none), not the
// supervisor's, which is whatever its caller's was.
func TestExecUmaskAsApp(t *testing.T) {
	p := newPod(t, nil)
	p.addApp("a", schema.App{}, []string{"sleep", "1000"}, nil)
	old := unix.Umask(0o077) // the supervisor inherits it
	p.mustStart(modeRun)
	unix.Umask(old)
	umask := func(pid string) string {
		out, _ := p.exec("a", "grep", "Umask", "/proc/"+pid+"/status")
		return strings.TrimSpace(out)
	}
	if app, ex := umask("1"), umask("self"); app != ex {
		t.Errorf("umask: app %q, exec %q", app, ex)
	}
}
