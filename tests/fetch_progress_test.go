package tests

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/tests/testutil"
)

// openPTY returns the master and slave ends of a new pseudo-terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pts: %v", err)
	}
	unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 100})
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// fetchOnTTY runs rkt fetch with stderr on a pty and returns what the
// terminal received.
func fetchOnTTY(t *testing.T, env *testutil.Env, args ...string) (stdout, tty string) {
	t.Helper()
	master, slave := openPTY(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := env.Command(ctx, append([]string{"fetch"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var term bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&term, master); close(done) }() // ends with EIO when rkt exits
	if err := cmd.Wait(); err != nil {
		t.Fatalf("rkt fetch: %v\n%s", err, term.String())
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	return out.String(), term.String()
}

// TestFetchProgressOnTTY: per-layer bars on a terminal, none with
// --no-progress; stdout holds only the image ID either way.
func TestFetchProgressOnTTY(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	data := testutil.RandomLayer(t, 3, "data", 4, 1<<20)
	img := testutil.BusyboxWith(t, testutil.ImageConfig{}, data)
	ref := reg.Push(t, "progress:1", img)
	reg.SetBlobRate(2 << 20)

	stdout, tty := fetchOnTTY(t, env, ref)
	if strings.TrimSpace(stdout) != testutil.ImageID(t, img) {
		t.Errorf("stdout %q, want only the image ID", stdout)
	}
	dataDigest, _ := data.Digest()
	for _, want := range []string{"\x1b[", dataDigest.Hex[:12], "MiB", "done", "["} {
		if !strings.Contains(tty, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, tty)
		}
	}
	if strings.Count(tty, dataDigest.Hex[:12]) < 2 {
		t.Errorf("the bar of the data layer was drawn once only (no updates):\n%q", tty)
	}

	env.RunOK("image", "rm", testutil.ImageID(t, img))
	_, tty = fetchOnTTY(t, env, "--no-progress", ref)
	if strings.Contains(tty, "\x1b[") || strings.Contains(tty, dataDigest.Hex[:12]) {
		t.Errorf("--no-progress drew progress: %q", tty)
	}
}
