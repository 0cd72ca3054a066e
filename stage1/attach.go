package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"time"

	"github.com/rkt/rkt/stage1/control"
)

// deadlineWriter bounds each write to an attached client so a stuck client
// cannot stall the app's output.
type deadlineWriter struct {
	conn net.Conn
	w    io.Writer
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	d.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return d.w.Write(p)
}

// handleAttach streams a running app's stdio until it exits or the client
// goes away.
func (sv *supervisor) handleAttach(conn net.Conn, br *bufio.Reader, req *control.Request) {
	a, err := sv.lookup(req.App)
	if err != nil {
		writeResponse(conn, &control.Response{}, err)
		return
	}
	spec := req.Attach
	if spec == nil {
		spec = &control.AttachSpec{Stdout: true, Stderr: true}
	}
	a.mu.Lock()
	running, exited, hasStdin := a.running(), a.exited, a.stdin != nil
	stdout, stderr, pty, stdinOnce := a.stdout, a.stderr, a.pty, a.manifest.StdinOnce
	a.mu.Unlock()
	if !running {
		writeResponse(conn, &control.Response{}, errNotRunning(req.App))
		return
	}
	if spec.Stdin && !hasStdin {
		writeResponse(conn, &control.Response{}, errInvalid("app %q was not created with stdin", req.App))
		return
	}
	if err := writeResponse(conn, &control.Response{}, nil); err != nil {
		return
	}
	fw := control.NewFrameWriter(conn)
	if spec.Stdout {
		defer stdout.subscribe(deadlineWriter{conn, fw.StreamWriter(control.FrameStdout)})()
	}
	if spec.Stderr {
		defer stderr.subscribe(deadlineWriter{conn, fw.StreamWriter(control.FrameStderr)})()
	}
	gone := make(chan struct{})
	var stdin io.Writer
	if spec.Stdin {
		stdin = appStdin{a}
	}
	go readClientFrames(conn, br, stdin, pty, func() { close(gone) }, func() {
		if stdinOnce {
			a.closeStdin()
		}
	})
	select {
	case <-gone:
		// StdinOnce: the first attach session's end ends stdin.
		if spec.Stdin && stdinOnce {
			a.closeStdin()
		}
		return
	case <-exited:
	}
	a.mu.Lock()
	code := a.status.ExitCode
	a.mu.Unlock()
	b, _ := json.Marshal(control.ExitResult{ExitCode: code})
	fw.WriteFrame(control.FrameExit, b)
}

// appStdin writes to the app's current stdin.
type appStdin struct{ a *app }

func (s appStdin) Write(p []byte) (int, error) {
	s.a.mu.Lock()
	w := s.a.stdin
	s.a.mu.Unlock()
	if w == nil {
		return 0, io.ErrClosedPipe
	}
	return w.Write(p)
}

// closeStdin ends the app's stdin (StdinOnce after the first attach); with
// a tty it sends ^D, since closing the terminal would end its output too.
func (a *app) closeStdin() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stdin == nil {
		return
	}
	if a.pty != nil {
		a.stdin.Write([]byte{4})
		return
	}
	a.stdin.Close()
	a.stdin = nil
}
