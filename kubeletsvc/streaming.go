package kubeletsvc

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

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
	cw, halfClose := conn.(interface{ CloseWrite() error })
	toPod, fromPod := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := io.Copy(conn, stream)
		if halfClose {
			cw.CloseWrite()
		}
		toPod <- err
	}()
	go func() {
		_, err := io.Copy(stream, conn)
		fromPod <- err
	}()
	select {
	case err = <-fromPod:
		return err
	case err = <-toPod:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err != nil || !halfClose {
		return err
	}
	// The client half-closed its side (kubectl does when its local
	// connection reaches EOF, then waits for the pod's answer), and so
	// did this end of the pod's connection: what the pod still sends is
	// forwarded until it closes, for up to portForwardDrain (containerd
	// and CRI-O give it one second).
	t := time.NewTimer(portForwardDrain)
	defer t.Stop()
	select {
	case err = <-fromPod:
	case <-t.C:
	case <-ctx.Done():
		err = ctx.Err()
	}
	return err
}

// portForwardDrain bounds how long a forwarded connection the client
// half-closed waits for the pod to finish its answer and close.
const portForwardDrain = 5 * time.Second

// termSizes converts the streaming server's resize events for stage0.
func termSizes(ctx context.Context, in <-chan remotecommandserver.TerminalSize) <-chan stage0.TermSize {
	return chanmap.Map(ctx, in, func(sz remotecommandserver.TerminalSize) stage0.TermSize {
		return stage0.TermSize{Width: sz.Width, Height: sz.Height}
	})
}
