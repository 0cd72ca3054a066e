package kubeletsvc

import (
	"context"
	"io"

	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// streamRuntime serves the CRI streaming server's Exec, Attach and
// PortForward from stage0.
type streamRuntime struct {
	svc *criService
}

func (r *streamRuntime) Exec(ctx context.Context, containerID string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	return errUnimplemented
}

func (r *streamRuntime) Attach(ctx context.Context, containerID string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	return errUnimplemented
}

func (r *streamRuntime) PortForward(ctx context.Context, podSandboxID string, port int32, stream io.ReadWriteCloser) error {
	return errUnimplemented
}
