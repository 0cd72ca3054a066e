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

// TestCancelKillsExecNotReadingStdin: a cancelled exec is killed even when
// the process does not read its stdin and the client sent more than a pipe
// holds. The supervisor's reader of the client's frames blocked writing to
// the full stdin pipe, never saw the client go away, and the process ran on.
func TestCancelKillsExecNotReadingStdin(t *testing.T) {
	for _, tty := range []bool{false, true} {
		name := "pipe"
		if tty {
			name = "tty"
		}
		t.Run(name, func(t *testing.T) {
			p := newPod(t, nil)
			p.addApp("a", schema.App{}, []string{"sleep", "1000"}, nil)
			p.mustStart(modeRun)
			c, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			t0 := time.Now()
			_, err := p.client.Exec(c, control.ExecRequest{
				App: "a", Args: []string{"sleep", "78"}, TTY: tty,
				Stdin: bytes.NewReader(bytes.Repeat([]byte("x\n"), 1<<20)),
			})
			if err == nil || time.Since(t0) > 5*time.Second {
				t.Fatalf("cancelled exec: %v after %v", err, time.Since(t0))
			}
			deadline := time.Now().Add(3 * time.Second)
			for {
				out, _ := p.exec("a", "ps", "-o", "args")
				if !strings.Contains(out, "sleep 78") {
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
