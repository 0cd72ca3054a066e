package kubeletsvc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

// maxExecSyncOutput bounds what ExecSync keeps of each stream.
const maxExecSyncOutput = 16 << 20

// ExecSync runs a command in a container and returns its output and exit
// code; past the timeout (if any) the command is killed and the call fails
// with DeadlineExceeded.
func (c *criService) ExecSync(ctx context.Context, r *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if len(r.GetCmd()) == 0 {
		return nil, invalidf("no command to exec")
	}
	ct, err := c.getContainer(ctx, r.GetContainerId())
	if err != nil {
		return nil, err
	}
	if r.GetTimeout() > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(r.GetTimeout())*time.Second)
		defer cancel()
	}
	var stdout, stderr limitedBuffer
	code, err := c.rt.Exec(ctx, ct.sb.ID(), stage0.ExecOptions{
		App: ct.app.App.Name, Args: r.GetCmd(), Stdout: &stdout, Stderr: &stderr,
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
	return &runtimeapi.ExecSyncResponse{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: int32(code)}, nil
}

// limitedBuffer keeps the first maxExecSyncOutput bytes written to it.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxExecSyncOutput - b.Len(); room < len(p) {
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// Exec returns a streaming URL for an exec in a container.
func (c *criService) Exec(ctx context.Context, r *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	ct, err := c.getContainer(ctx, r.GetContainerId())
	if err != nil {
		return nil, err
	}
	if !ct.sb.ready() {
		return nil, fmt.Errorf("%w: container %s does not run", errFailedPrecondition, ct.id)
	}
	return c.stream.GetExec(r)
}

// Attach returns a streaming URL to attach to a container.
func (c *criService) Attach(ctx context.Context, r *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	ct, err := c.getContainer(ctx, r.GetContainerId())
	if err != nil {
		return nil, err
	}
	if !ct.sb.ready() {
		return nil, fmt.Errorf("%w: container %s does not run", errFailedPrecondition, ct.id)
	}
	return c.stream.GetAttach(r)
}

// PortForward returns a streaming URL to forward ports of a sandbox.
func (c *criService) PortForward(ctx context.Context, r *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if _, err := c.getSandbox(ctx, r.GetPodSandboxId()); err != nil {
		return nil, err
	}
	return c.stream.GetPortForward(r)
}
