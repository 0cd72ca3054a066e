package kubeletsvc

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

func TestExecOutputBudget(t *testing.T) {
	out := &execOutput{room: 10}
	o, e := &execStream{out: out}, &execStream{out: out}
	for _, w := range []struct {
		s *execStream
		p string
	}{{o, "abcdef"}, {e, "1234"}, {o, "xyz"}, {e, "5"}} {
		if n, err := w.s.Write([]byte(w.p)); n != len(w.p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", w.p, n, err)
		}
	}
	if o.buf.String() != "abcdef" || e.buf.String() != "1234" || out.dropped != 4 {
		t.Fatalf("stdout %q stderr %q dropped %d; want abcdef, 1234, 4", o.buf.String(), e.buf.String(), out.dropped)
	}
	if !bytes.Equal(o.buf.Bytes(), []byte("abcdef")) {
		t.Fatal("stdout changed")
	}
}

func TestExecSync(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	id := e.startContainer(t, pod, "app")
	var got stage0.ExecOptions
	e.rt.exec = func(ctx context.Context, o stage0.ExecOptions) (int, error) {
		got = o
		fmt.Fprint(o.Stdout, "out")
		fmt.Fprint(o.Stderr, "err")
		return 3, nil
	}
	r, err := e.rs.ExecSync(e.ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sh", "-c", "exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.GetStdout()) != "out" || string(r.GetStderr()) != "err" || r.GetExitCode() != 3 {
		t.Errorf("stdout %q stderr %q code %d", r.GetStdout(), r.GetStderr(), r.GetExitCode())
	}
	if got.App != "app-0" || !slices.Equal(got.Args, []string{"sh", "-c", "exit 3"}) || got.TTY || got.Stdin != nil {
		t.Errorf("exec options %+v", got)
	}
	_, err = e.rs.ExecSync(e.ctx, &runtimeapi.ExecSyncRequest{ContainerId: id})
	wantCode(t, "no command", err, codes.InvalidArgument)
}

// Output past the budget is dropped and said so; the reply still fits.
func TestExecSyncOutputLimit(t *testing.T) {
	e := newTestEnv(t)
	id := e.startContainer(t, e.runPod(t, "web"), "app")
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	e.rt.exec = func(ctx context.Context, o stage0.ExecOptions) (int, error) {
		for i := 0; i < 20; i++ { // 20 MiB, over the 16 MiB message limit
			o.Stdout.Write(chunk)
		}
		return 0, nil
	}
	r, err := e.rs.ExecSync(e.ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"yes"}}, grpc.MaxCallRecvMsgSize(maxMsgSize))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.GetStdout()) != maxExecSyncOutput {
		t.Errorf("stdout of %d bytes, want the %d of the budget", len(r.GetStdout()), maxExecSyncOutput)
	}
	want := fmt.Sprintf("[output truncated: %d bytes dropped]", 20<<20-maxExecSyncOutput)
	if !strings.Contains(string(r.GetStderr()), want) {
		t.Errorf("stderr %q lacks %q", r.GetStderr(), want)
	}
}

func TestExecSyncTimeout(t *testing.T) {
	e := newTestEnv(t)
	id := e.startContainer(t, e.runPod(t, "web"), "app")
	e.rt.exec = func(ctx context.Context, o stage0.ExecOptions) (int, error) {
		<-ctx.Done() // stage0 kills the command when ctx ends
		return -1, ctx.Err()
	}
	start := time.Now()
	_, err := e.rs.ExecSync(e.ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sleep", "100"}, Timeout: 1})
	wantCode(t, "ExecSync past its timeout", err, codes.DeadlineExceeded)
	if d := time.Since(start); d < time.Second || d > 10*time.Second {
		t.Errorf("returned after %v, want about 1s", d)
	}
}

func TestExecSyncNotRunning(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	created := e.createContainer(t, pod, "app")
	_, err := e.rs.ExecSync(e.ctx, &runtimeapi.ExecSyncRequest{ContainerId: created, Cmd: []string{"true"}})
	wantCode(t, "exec in a created container", err, codes.FailedPrecondition)
	_, err = e.rs.ExecSync(e.ctx, &runtimeapi.ExecSyncRequest{ContainerId: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Cmd: []string{"true"}})
	wantCode(t, "exec in an unknown container", err, codes.NotFound)
}

// A timeout too long for a time.Duration is no deadline, not one already
// past (int64 seconds overflow when turned into nanoseconds).
func TestExecSyncHugeTimeout(t *testing.T) {
	e := newTestEnv(t)
	id := e.startContainer(t, e.runPod(t, "web"), "app")
	e.rt.exec = func(ctx context.Context, o stage0.ExecOptions) (int, error) {
		return 0, ctx.Err()
	}
	for _, timeout := range []int64{1 << 62, 9223372037, math.MaxInt64} {
		if _, err := e.rs.ExecSync(e.ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"true"}, Timeout: timeout}); err != nil {
			t.Errorf("ExecSync with timeout %d: %v", timeout, err)
		}
	}
}

// No exec can carry a NUL byte or be empty: such a command is refused
// before stage0 is asked.
func TestExecNULInCommand(t *testing.T) {
	e := newTestEnv(t)
	id := e.startContainer(t, e.runPod(t, "web"), "app")
	ran := false
	e.rt.exec = func(ctx context.Context, o stage0.ExecOptions) (int, error) {
		ran = true
		return 0, nil
	}
	cmd := []string{"sh", "-c", "true\x00rm -rf /"}
	_, err := e.rs.ExecSync(e.ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd})
	wantCode(t, "ExecSync with a NUL byte", err, codes.InvalidArgument)
	if ran {
		t.Error("stage0 ran the command")
	}
	_, err = e.rs.Exec(e.ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: cmd, Stdout: true})
	wantCode(t, "Exec with a NUL byte", err, codes.InvalidArgument)
	// an empty command is refused by Exec too, not inside the stream
	_, err = e.rs.Exec(e.ctx, &runtimeapi.ExecRequest{ContainerId: id, Stdout: true})
	wantCode(t, "Exec with no command", err, codes.InvalidArgument)
}

// PortForward on a sandbox that is not ready is FailedPrecondition, as Exec
// and Attach are for a container of such a sandbox (and as containerd
// refuses it): it used to hand out a URL whose stream then failed.
func TestPortForwardNotReady(t *testing.T) {
	e := newTestEnv(t)
	e.withStream(t)
	pod := e.runPod(t, "web")
	id := e.startContainer(t, pod, "app")
	if _, err := e.rs.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: pod}); err != nil {
		t.Fatal(err)
	}
	_, err := e.rs.Exec(e.ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"true"}, Stdout: true})
	wantCode(t, "Exec in a stopped sandbox", err, codes.FailedPrecondition)
	r, err := e.rs.PortForward(e.ctx, &runtimeapi.PortForwardRequest{PodSandboxId: pod, Port: []int32{80}})
	if err == nil {
		t.Fatalf("PortForward to a stopped sandbox answered a URL (%s), want FailedPrecondition", r.GetUrl())
	}
	wantCode(t, "PortForward to a stopped sandbox", err, codes.FailedPrecondition)
}
