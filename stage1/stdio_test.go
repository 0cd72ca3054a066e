package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

func TestAttachStdinOnce(t *testing.T) {
	p := newPod(t, nil)
	p.addApp("cat", schema.App{Stdin: true, StdinOnce: true}, []string{"sh", "-c", "cat; echo done >&2"}, nil)
	p.mustStart(modeSandbox)
	if err := p.client.StartApp(ctx(t), "cat"); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err := p.client.Attach(ctx(t), control.AttachRequest{App: "cat", Stdin: strings.NewReader("hello\n"), Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "hello\n" || errb.String() != "done\n" {
		t.Errorf("attach output %q %q", out.String(), errb.String())
	}
	if st := p.status("cat"); st.State != schema.AppExited || st.ExitCode != 0 {
		t.Errorf("status: %+v", st)
	}
	if err := p.client.Attach(ctx(t), control.AttachRequest{App: "cat", Stdout: &out}); !errorsIs(err, control.ErrAppNotRunning) {
		t.Errorf("attach to exited app: %v", err)
	}
}

func TestAttachTTY(t *testing.T) {
	p := newPod(t, nil)
	p.addApp("sh", schema.App{Stdin: true, TTY: true}, []string{"sh"}, nil)
	p.mustStart(modeSandbox)
	if err := p.client.StartApp(ctx(t), "sh"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := p.client.Attach(ctx(t), control.AttachRequest{App: "sh", TTY: true, Stdin: strings.NewReader("tty; exit 5\n"), Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "/dev/pts/0") {
		t.Errorf("attach tty output %q", out.String())
	}
	if st := p.status("sh"); st.ExitCode != 5 {
		t.Errorf("status: %+v", st)
	}
}

// TestContextCancelKillsExec: a cancelled exec is killed, also when the
// process does not read its stdin and the client sent more than a pipe or
// a terminal holds (the supervisor's reader of the client's frames blocked
// writing to the full stdin, never saw the client go away, and the process
// ran on).
func TestContextCancelKillsExec(t *testing.T) {
	for _, tc := range []struct {
		name         string
		stdin, tty   bool
		cmd          string
		cancelsAfter time.Duration
	}{
		{"no stdin", false, false, "77", 300 * time.Millisecond},
		{"stdin unread, pipe", true, false, "78", time.Second},
		{"stdin unread, tty", true, true, "79", time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod(t, nil)
			p.addApp("a", schema.App{}, []string{"sleep", "1000"}, nil)
			p.mustStart(modeRun)
			c, cancel := context.WithTimeout(context.Background(), tc.cancelsAfter)
			defer cancel()
			req := control.ExecRequest{App: "a", Args: []string{"sleep", tc.cmd}, TTY: tc.tty}
			if tc.stdin {
				req.Stdin = bytes.NewReader(bytes.Repeat([]byte("x\n"), 1<<20))
			}
			t0 := time.Now()
			_, err := p.client.Exec(c, req)
			if err == nil || time.Since(t0) > 5*time.Second {
				t.Fatalf("cancelled exec: %v after %v", err, time.Since(t0))
			}
			deadline := time.Now().Add(3 * time.Second)
			for {
				out, _ := p.exec("a", "ps", "-o", "args")
				if !strings.Contains(out, "sleep "+tc.cmd) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("exec'd process survived the cancelled client: %q", out)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}
