package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// leanProc is `stage1 lean` run on its own, without a pod: its one app is
// a sleep (a child of the lean image, as an app is of the supervisor)
// whose output is the pipe w, logged to log.
type leanProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	app    int
	w      *os.File
	log    string
	socket string
}

// startLean starts `stage1 lean` with the app's output logged to logPath
// ("" for a file in a temporary directory); sh runs before, in the
// process that becomes the lean image.
func startLean(t *testing.T, logPath, sh string) *leanProc {
	t.Helper()
	needRoot(t)
	bin := stage1Binary(t)
	dir := t.TempDir()
	if logPath == "" {
		logPath = filepath.Join(dir, "app.log")
	}
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l := &leanProc{t: t, w: w, log: logPath, socket: filepath.Join(dir, "stage1.sock")}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: l.socket, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false) // the lean image has it
	defer ln.Close()
	lf, err := ln.File()
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	// fd 3: the control socket, 4: the log, 5: the app's stdout; no state
	// (fd 9): a `stage1 resume` exits at once.
	l.cmd = exec.Command("/bin/sh", "-c", sh+
		`sleep 1000 & exec "$0" lean --pod-dir="$1" --state-fd=9 --listener=3 --app=$!,4,5,-1`, bin, dir)
	l.cmd.ExtraFiles = []*os.File{lf, logf, r}
	l.cmd.Stderr = os.Stderr
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// passing r made its file description blocking; the lean image reads
	// it non-blocking, as refresh.go passes it
	if err := unix.SetNonblock(int(r.Fd()), true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.stop)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		args := l.args()
		if len(args) > 1 && args[1] == "lean" {
			for _, a := range args {
				if s, ok := strings.CutPrefix(a, "--app="); ok {
					l.app, _ = strconv.Atoi(strings.Split(s, ",")[0])
				}
			}
			return l
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("stage1 lean never started: %q", l.args())
	return nil
}

func (l *leanProc) args() []string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(l.cmd.Process.Pid) + "/cmdline")
	return strings.Split(string(b), "\x00")
}

// image is what the process runs as ("lean", "resume"), "" once it exited.
func (l *leanProc) image() string {
	if args := l.args(); len(args) > 1 {
		return args[1]
	}
	return ""
}

// waitNotLean waits up to d for the lean image to exec `stage1 resume`
// (or to exit).
func (l *leanProc) waitNotLean(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if l.image() != "lean" {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func (l *leanProc) stop() {
	l.w.Close()
	l.cmd.Process.Kill()
	l.cmd.Wait()
	if l.app > 0 {
		syscall.Kill(l.app, syscall.SIGKILL)
	}
}

// flood writes short lines to the app's output until the returned
// function is called.
func (l *leanProc) flood() (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		buf := bytes.Repeat([]byte("y\n"), 32<<10)
		for {
			select {
			case <-done:
				return
			default:
			}
			l.w.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			if _, err := l.w.Write(buf); err != nil && !os.IsTimeout(err) {
				return
			}
		}
	}()
	return func() { close(done); <-ended }
}

// TestLeanStopSignalWhileFlooded: an app that writes its output faster
// than the lean image logs it must not keep it from taking SIGTERM (or a
// connection, or an app's exit): it execs `stage1 resume`.
func TestLeanStopSignalWhileFlooded(t *testing.T) {
	l := startLean(t, os.DevNull, "")
	stop := l.flood()
	defer stop()
	time.Sleep(300 * time.Millisecond)
	if err := l.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !l.waitNotLean(3 * time.Second) {
		t.Errorf("SIGTERM to stage1 lean not handled in 3 s while its app floods its output")
	}
}

// TestLeanConnectionWhileFlooded: as above for a call on the control
// socket.
func TestLeanConnectionWhileFlooded(t *testing.T) {
	l := startLean(t, os.DevNull, "")
	stop := l.flood()
	defer stop()
	time.Sleep(300 * time.Millisecond)
	c, err := net.Dial("unix", l.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !l.waitNotLean(3 * time.Second) {
		t.Errorf("a connection to stage1 lean not handled in 3 s while its app floods its output")
	}
}

// TestLeanLogFileSizeLimit: a log that grows past the supervisor's
// RLIMIT_FSIZE is not written further (EFBIG), as the Go supervisor, which
// ignores SIGXFSZ, does; the lean image is not killed by SIGXFSZ.
func TestLeanLogFileSizeLimit(t *testing.T) {
	l := startLean(t, "", "ulimit -f 8; ") // 4 KiB (512-byte blocks)
	line := append(bytes.Repeat([]byte("x"), 999), '\n')
	for i := 0; i < 8; i++ {
		if _, err := l.w.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if img := l.image(); img != "lean" {
		st, _ := os.ReadFile("/proc/" + strconv.Itoa(l.cmd.Process.Pid) + "/stat")
		t.Fatalf("stage1 lean is gone (image %q, %s) after its log reached RLIMIT_FSIZE", img, st)
	}
	// still logging: an entry fits again once the log is truncated
	if err := os.Truncate(l.log, 0); err != nil {
		t.Fatal(err)
	}
	l.w.Write([]byte("after\n"))
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(l.log); bytes.Contains(b, []byte(" stdout F after\n")) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(l.log)
	t.Errorf("no entry after the truncation; log:\n%s", b)
}
