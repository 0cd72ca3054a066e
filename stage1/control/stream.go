package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// ExecRequest runs a new process in a running app.
type ExecRequest struct {
	App    string
	Args   []string
	Env    []string // KEY=VALUE, added to the app's environment
	Cwd    string   // default: the app's working directory
	User   string   // "uid[:gid]" or a user name of the app's image; default: the app's user
	TTY    bool     // allocate a terminal; its output comes on Stdout
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Resize <-chan TermSize // terminal size changes (TTY only)
}

// AttachRequest attaches to the main process of a running app.
type AttachRequest struct {
	App    string
	Stdin  io.Reader // needs the app to have been created with Stdin
	Stdout io.Writer
	Stderr io.Writer
	TTY    bool            // the app has a tty: its output comes on Stdout
	Resize <-chan TermSize // terminal size changes (TTY apps only)
}

// Exec runs a process in the app and returns its exit code once it exits
// and its output has been copied. Cancelling ctx kills the process.
func (c *Client) Exec(ctx context.Context, r ExecRequest) (int, error) {
	if len(r.Args) == 0 {
		return -1, fmt.Errorf("exec in %q: no command: %w", r.App, ErrInvalid)
	}
	req := &Request{Op: OpExec, App: r.App, Exec: &ExecSpec{
		Args: r.Args, Env: r.Env, Cwd: r.Cwd, User: r.User, TTY: r.TTY, Stdin: r.Stdin != nil,
	}}
	if d, ok := ctx.Deadline(); ok {
		req.Deadline = d
	}
	res, err := c.stream(ctx, req, r.Stdin, r.Stdout, r.Stderr, r.Resize)
	if err != nil {
		return -1, err
	}
	return res.ExitCode, nil
}

// Attach streams the app's stdio until the app exits, the client's stdin
// ends for a StdinOnce app, or ctx is cancelled (the app keeps running).
func (c *Client) Attach(ctx context.Context, r AttachRequest) error {
	req := &Request{Op: OpAttach, App: r.App, Attach: &AttachSpec{
		Stdin: r.Stdin != nil, Stdout: r.Stdout != nil, Stderr: r.Stderr != nil,
	}}
	_, err := c.stream(ctx, req, r.Stdin, r.Stdout, r.Stderr, r.Resize)
	return err
}

func (c *Client) stream(ctx context.Context, req *Request, stdin io.Reader, stdout, stderr io.Writer, resize <-chan TermSize) (*ExitResult, error) {
	_, conn, br, err := c.roundTrip(ctx, req, true)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	fw := NewFrameWriter(conn)
	done := make(chan struct{})
	defer close(done)
	if stdin != nil {
		go pumpStdin(fw, stdin)
	}
	if resize != nil {
		go pumpResize(fw, resize, done)
	}
	res, err := readOutput(br, stdout, stderr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s in %q: %w", req.Op, req.App, ctx.Err())
		}
		return nil, fmt.Errorf("%s in %q: %w", req.Op, req.App, err)
	}
	if res.Error != "" {
		return res, fmt.Errorf("%s in %q: %s", req.Op, req.App, res.Error)
	}
	return res, nil
}

func pumpStdin(fw *FrameWriter, stdin io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := stdin.Read(buf)
		if n > 0 {
			if fw.WriteFrame(FrameStdin, buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			fw.WriteFrame(FrameStdinClose, nil)
			return
		}
	}
}

func pumpResize(fw *FrameWriter, resize <-chan TermSize, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case sz, ok := <-resize:
			if !ok {
				return
			}
			b, _ := json.Marshal(sz)
			if fw.WriteFrame(FrameResize, b) != nil {
				return
			}
		}
	}
}

func readOutput(br *bufio.Reader, stdout, stderr io.Writer) (*ExitResult, error) {
	for {
		typ, payload, err := ReadFrame(br)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil, fmt.Errorf("stream closed before the exit status: %w", err)
			}
			return nil, err
		}
		switch typ {
		case FrameStdout:
			if stdout != nil {
				stdout.Write(payload)
			}
		case FrameStderr:
			if stderr != nil {
				stderr.Write(payload)
			}
		case FrameExit:
			var res ExitResult
			if err := json.Unmarshal(payload, &res); err != nil {
				return nil, fmt.Errorf("cannot parse exit frame: %w", err)
			}
			return &res, nil
		}
	}
}
