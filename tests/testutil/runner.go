package testutil

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"
)

// DefaultTimeout bounds every rkt invocation made through Env.Run.
const DefaultTimeout = 3 * time.Minute

// Env is one test's rkt installation: a private data dir and private
// system, local and user config dirs. NewEnv registers the leak check as a
// cleanup, so it runs after every cleanup the test registers later
// (registries, background processes).
type Env struct {
	T            testing.TB
	Root         string   // temp dir holding everything below
	DataDir      string   // --dir
	SystemConfig string   // --system-config
	LocalConfig  string   // --local-config
	UserConfig   string   // --user-config
	ExtraEnv     []string // added to the environment of every rkt process
	Debug        bool     // pass --debug to every invocation
	Timeout      time.Duration
	Bin          string // the rkt binary; "" for RKTBin's

	tracker *podTracker
}

// Result is the outcome of one rkt invocation.
type Result struct {
	Args     []string
	Stdout   string
	Stderr   string
	Code     int // exit code; -1 when killed by a signal or timed out
	Duration time.Duration
	MaxRSS   int64 // peak resident memory of the rkt process, in bytes
}

// String describes the invocation for test failure messages.
func (r Result) String() string {
	return fmt.Sprintf("rkt %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.Args, " "), r.Code, r.Stdout, r.Stderr)
}

// NewEnv creates a private rkt environment for t. The data dir is short
// (under os.TempDir) so that unix socket paths in pod dirs stay valid.
func NewEnv(t testing.TB) *Env {
	t.Helper()
	root, err := os.MkdirTemp("", "rkt-")
	if err != nil {
		t.Fatalf("cannot create rkt test dir: %v", err)
	}
	e := &Env{
		T:            t,
		Root:         root,
		DataDir:      filepath.Join(root, "data"),
		SystemConfig: filepath.Join(root, "sys"),
		LocalConfig:  filepath.Join(root, "etc"),
		UserConfig:   filepath.Join(root, "user"),
		Timeout:      DefaultTimeout,
	}
	for _, d := range []string{e.DataDir, e.SystemConfig, e.LocalConfig, e.UserConfig} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("cannot create %s: %v", d, err)
		}
	}
	e.tracker = startPodTracker(e.DataDir)
	t.Cleanup(func() {
		e.CheckLeaks()
		if err := os.RemoveAll(root); err != nil {
			t.Errorf("cannot remove rkt test dir %s: %v", root, err)
		}
	})
	return e
}

// WithT returns a copy of the environment that reports to t (a subtest),
// sharing the data and config dirs; the leak check stays with the parent.
func (e *Env) WithT(t testing.TB) *Env {
	c := *e
	c.T = t
	return &c
}

// GlobalArgs are the global flags that point rkt at this environment.
func (e *Env) GlobalArgs() []string {
	args := []string{
		"--dir=" + e.DataDir,
		"--system-config=" + e.SystemConfig,
		"--local-config=" + e.LocalConfig,
		"--user-config=" + e.UserConfig,
	}
	if e.Debug {
		args = append(args, "--debug")
	}
	return args
}

// Command returns an unstarted rkt command for this environment; the
// caller owns the process (use it for background or killed processes).
func (e *Env) Command(ctx context.Context, args ...string) *exec.Cmd {
	full := append(e.GlobalArgs(), args...)
	bin := e.Bin
	if bin == "" {
		bin = RKTBin(e.T)
	}
	cmd := exec.CommandContext(ctx, bin, full...)
	cmd.Env = append(os.Environ(), e.ExtraEnv...)
	return cmd
}

// Run runs rkt with args and returns its result; it fails the test only if
// rkt cannot be started.
func (e *Env) Run(args ...string) Result {
	e.T.Helper()
	return e.RunStdin(nil, args...)
}

// RunStdin is Run with the given bytes on stdin.
func (e *Env) RunStdin(stdin []byte, args ...string) Result {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e.Timeout)
	defer cancel()
	cmd := e.Command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	cmd.WaitDelay = 5 * time.Second
	resetPeakRSS()
	start := time.Now()
	err := cmd.Run()
	res := Result{Args: args, Stdout: stdout.String(), Stderr: stderr.String(), Duration: time.Since(start)}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			res.MaxRSS = ru.Maxrss * 1024 // kilobytes on Linux
		}
	}
	if ctx.Err() != nil {
		res.Code = -1
		res.Stderr += fmt.Sprintf("\n[testutil: timed out after %s]", e.Timeout)
		return res
	}
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			res.Code = ee.ExitCode()
			return res
		}
		e.T.Fatalf("cannot run rkt %v: %v", args, err)
	}
	return res
}

// RunOK runs rkt and fails the test unless it exits 0.
func (e *Env) RunOK(args ...string) Result {
	e.T.Helper()
	r := e.Run(args...)
	if r.Code != 0 {
		e.T.Fatalf("expected success, got %s", r)
	}
	return r
}

// RunFail runs rkt and fails the test if it exits 0.
func (e *Env) RunFail(args ...string) Result {
	e.T.Helper()
	r := e.Run(args...)
	if r.Code == 0 {
		e.T.Fatalf("expected failure, got %s", r)
	}
	return r
}

// resetPeakRSS lowers this process's peak RSS to its current RSS: a child
// started with vfork (as os/exec does) inherits the parent's peak at exec
// in its rusage, so a large test binary would otherwise show as the
// child's MaxRSS.
func resetPeakRSS() {
	debug.FreeOSMemory()
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // best effort: Linux 4.0+
}
