package tests

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rkt/rkt/tests/testutil"
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

// TestPodRunProgress: rkt run draws rkt fetch's per-layer progress bars on
// a terminal while it fetches a missing image, none with --no-progress.
func TestPodRunProgress(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	data := testutil.RandomLayer(t, 5, "data", 2, 1<<20)
	img := testutil.BusyboxWith(t, testutil.ImageConfig{}, data)
	ref := reg.Push(t, "runprogress:1", img)
	reg.SetBlobRate(4 << 20)
	dataDigest, _ := data.Digest()

	runOnTTY := func(extra ...string) string {
		master, slave := openPTY(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		args := append([]string{"run", "--insecure-options=http", "--net=none"}, extra...)
		cmd := env.Command(ctx, append(args, ref, "--exec=/bin/true")...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, slave
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		slave.Close()
		var term bytes.Buffer
		done := make(chan struct{})
		go func() { io.Copy(&term, master); close(done) }() // ends with EIO when rkt exits
		err := cmd.Wait()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		if err != nil {
			t.Fatalf("rkt run: %v\n%s", err, term.String())
		}
		return term.String()
	}

	tty := runOnTTY()
	for _, want := range []string{"\x1b[", "Fetching " + ref, dataDigest.Hex[:12], "MiB", "done"} {
		if !strings.Contains(tty, want) {
			t.Errorf("terminal output of rkt run lacks %q:\n%q", want, tty)
		}
	}
	env.RunOK("gc", "--grace-period=0s")
	env.RunOK("image", "rm", testutil.ImageID(t, img))
	if tty := runOnTTY("--no-progress"); strings.Contains(tty, dataDigest.Hex[:12]) {
		t.Errorf("rkt run --no-progress drew progress: %q", tty)
	}
}
