package kubeletsvc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"

	"github.com/rkt/rkt/stage0"
)

// maxExecSyncOutput bounds the stdout plus stderr that ExecSync returns, so
// that its reply fits the 16 MiB message limit with room for the exit code,
// the framing and the truncation note. Output past it is dropped (the
// command still runs to its end, as in CRI-O and containerd) and stderr
// ends with "[output truncated: N bytes dropped]".
const maxExecSyncOutput = maxMsgSize - 64<<10

// ExecSync runs a command in a container and returns its output and exit
// code; past the timeout (if any) the command is killed and the call fails
// with DeadlineExceeded.
func (c *criService) ExecSync(ctx context.Context, r *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if err := checkCmd(r.GetCmd()); err != nil {
		return nil, err
	}
	ct, err := c.getContainer(ctx, r.GetContainerId())
	if err != nil {
		return nil, err
	}
	if r.GetTimeout() > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, seconds(r.GetTimeout()))
		defer cancel()
	}
	out := &execOutput{room: maxExecSyncOutput}
	stdout, stderr := &execStream{out: out}, &execStream{out: out}
	code, err := c.rt.Exec(ctx, ct.sb.ID(), stage0.ExecOptions{
		App: ct.app.App.Name, Args: r.GetCmd(), Stdout: stdout, Stderr: stderr,
	})
	if ctx.Err() != nil {
		return nil, fmt.Errorf("exec %q in container %s: %w after %ds", r.GetCmd(), ct.id, ctx.Err(), r.GetTimeout())
	}
	if err != nil {
		if errors.Is(err, stage0.ErrNotRunning) {
			return nil, fmt.Errorf("%w: cannot exec in container %s: %v", errFailedPrecondition, ct.id, err)
		}
		return nil, fmt.Errorf("cannot exec %q in container %s: %w", r.GetCmd(), ct.id, err)
	}
	if out.dropped > 0 {
		fmt.Fprintf(&stderr.buf, "\n[output truncated: %d bytes dropped]\n", out.dropped)
	}
	return &runtimeapi.ExecSyncResponse{Stdout: stdout.buf.Bytes(), Stderr: stderr.buf.Bytes(), ExitCode: int32(code)}, nil
}

// seconds turns a CRI timeout in seconds into a duration, the longest one
// for those past time.Duration's range (which would overflow into an
// expired or negative timeout).
func seconds(s int64) time.Duration {
	if s > int64(math.MaxInt64/time.Second) {
		return math.MaxInt64
	}
	return time.Duration(s) * time.Second
}

// execOutput is the output budget shared by an exec's two streams.
type execOutput struct {
	mu      sync.Mutex
	room    int   // bytes still kept
	dropped int64 // bytes dropped past the budget
}

// execStream keeps what fits in its execOutput's budget.
type execStream struct {
	out *execOutput
	buf bytes.Buffer
}

func (s *execStream) Write(p []byte) (int, error) {
	s.out.mu.Lock()
	defer s.out.mu.Unlock()
	keep := min(len(p), s.out.room)
	s.buf.Write(p[:keep])
	s.out.room -= keep
	s.out.dropped += int64(len(p) - keep)
	return len(p), nil
}

// Exec returns a streaming URL for an exec in a container.
func (c *criService) Exec(ctx context.Context, r *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if err := checkCmd(r.GetCmd()); err != nil {
		return nil, err
	}
	st, err := c.streamServerFor(ctx, r.GetContainerId())
	if err != nil {
		return nil, err
	}
	return st.GetExec(r)
}

// checkCmd validates the command of an exec: not empty, no NUL byte.
func checkCmd(cmd []string) error {
	if len(cmd) == 0 {
		return invalidf("no command to exec")
	}
	return checkStrings("cmd", cmd)
}

// Attach returns a streaming URL to attach to a container.
func (c *criService) Attach(ctx context.Context, r *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	st, err := c.streamServerFor(ctx, r.GetContainerId())
	if err != nil {
		return nil, err
	}
	return st.GetAttach(r)
}

// streamServerFor returns the streaming server for a session with the
// container id, which must be in a running sandbox.
func (c *criService) streamServerFor(ctx context.Context, id string) (streaming.Server, error) {
	ct, err := c.getContainer(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ct.sb.ready() {
		return nil, fmt.Errorf("%w: container %s does not run", errFailedPrecondition, ct.id)
	}
	return c.streamServer()
}

// streamServer returns the streaming server, made on first use.
func (c *criService) streamServer() (streaming.Server, error) {
	if c.stream == nil {
		return nil, errors.New("no streaming server: the service is not serving")
	}
	return c.stream.server()
}

// PortForward returns a streaming URL to forward ports of a sandbox.
func (c *criService) PortForward(ctx context.Context, r *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	s, err := c.getSandbox(ctx, r.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	if !s.ready() {
		return nil, fmt.Errorf("%w: pod sandbox %s is not ready", errFailedPrecondition, s.ID())
	}
	st, err := c.streamServer()
	if err != nil {
		return nil, err
	}
	return st.GetPortForward(r)
}
