package kubeletsvc

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"

	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/rkt/rkt/pkg/chanmap"
	"github.com/rkt/rkt/stage0"
)

// streamRuntime serves the CRI streaming server's Exec, Attach and
// PortForward from stage0.
type streamRuntime struct {
	svc *criService
}

// Exec runs cmd in a container with the given streams; a non-zero exit code
// is returned as an exec.CodeExitError, as the streaming server expects.
func (r *streamRuntime) Exec(ctx context.Context, containerID string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	ct, err := r.svc.getContainer(ctx, containerID)
	if err != nil {
		return err
	}
	opts := stage0.ExecOptions{App: ct.app.App.Name, Args: cmd, TTY: tty, Resize: termSizes(ctx, resize)}
	if in != nil {
		opts.Stdin = in
	}
	if out != nil {
		opts.Stdout = out
	}
	if errw != nil {
		opts.Stderr = errw
	}
	code, err := r.svc.rt.Exec(ctx, ct.sb.ID(), opts)
	if err != nil {
		return fmt.Errorf("cannot exec %q in container %s: %w", cmd, ct.id, err)
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command %q exited with %d", cmd, code), Code: code}
	}
	return nil
}

// Attach connects the streams to a running container's stdio.
func (r *streamRuntime) Attach(ctx context.Context, containerID string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	ct, err := r.svc.getContainer(ctx, containerID)
	if err != nil {
		return err
	}
	opts := stage0.AttachOptions{App: ct.app.App.Name, TTY: tty, Resize: termSizes(ctx, resize)}
	if in != nil {
		opts.Stdin = in
	}
	if out != nil {
		opts.Stdout = out
	}
	if errw != nil {
		opts.Stderr = errw
	}
	if err := r.svc.rt.Attach(ctx, ct.sb.ID(), opts); err != nil {
		return fmt.Errorf("cannot attach to container %s: %w", ct.id, err)
	}
	return nil
}

// PortForward connects stream to port on the sandbox's loopback, from
// inside its network namespace.
func (r *streamRuntime) PortForward(ctx context.Context, podSandboxID string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	s, err := r.svc.getSandbox(ctx, podSandboxID)
	if err != nil {
		return err
	}
	if !s.ready() {
		return fmt.Errorf("%w: pod sandbox %s is not ready", errFailedPrecondition, s.ID())
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	conn, err := r.svc.rt.DialPod(ctx, s.ID(), "tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot forward to port %d of pod sandbox %s: %w", port, s.ID(), err)
	}
	defer conn.Close()
	done := make(chan error, 2)
	go func() {
		_, err := io.Copy(conn, stream)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		done <- err
	}()
	go func() {
		_, err := io.Copy(stream, conn)
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	return err
}

// termSizes converts the streaming server's resize events for stage0.
func termSizes(ctx context.Context, in <-chan remotecommandserver.TerminalSize) <-chan stage0.TermSize {
	return chanmap.Map(ctx, in, func(sz remotecommandserver.TerminalSize) stage0.TermSize {
		return stage0.TermSize{Width: sz.Width, Height: sz.Height}
	})
}
