package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/appuser"
	"github.com/rkt/rkt/pkg/envlist"
	"github.com/rkt/rkt/stage1/control"
)

// execStartTimeout bounds the set-up of an exec whose caller gives no
// deadline (a streaming session): as long as the kubelet waits for a call.
const execStartTimeout = 2 * time.Minute

// handleExec runs a process in a running app and streams its stdio.
func (sv *supervisor) handleExec(conn net.Conn, br *bufio.Reader, req *control.Request) {
	p, eio, err := sv.startExec(req)
	if err != nil {
		writeResponse(conn, &control.Response{}, err)
		return
	}
	if err := writeResponse(conn, &control.Response{}, nil); err != nil {
		p.Signal(sigKILL)
	}
	fw := control.NewFrameWriter(conn)
	eio.pumpTo(fw)
	go readClientFrames(conn, br, eio.stdin, eio.pty, func() { p.Signal(sigKILL) }, func() {
		switch {
		case eio.pty != nil:
			eio.pty.Write([]byte{4}) // ^D: EOF for the terminal's reader
		case eio.stdin != nil:
			eio.stdin.Close()
		}
	})
	ps, werr := p.Wait()
	code, _ := exitStatus(ps, werr)
	eio.wait(2 * time.Second)
	b, _ := json.Marshal(control.ExitResult{ExitCode: code})
	fw.WriteFrame(control.FrameExit, b)
	slog.Debug("exec done", "args", req.Exec.Args, "app", req.App, "code", code)
}

// execIO holds the supervisor's ends of an exec'd process's stdio.
type execIO struct {
	outR, errR *os.File
	stdin      io.WriteCloser
	pty        *os.File
	pumps      sync.WaitGroup
}

func (sv *supervisor) startExec(req *control.Request) (*libcontainer.Process, *execIO, error) {
	if req.Exec == nil || len(req.Exec.Args) == 0 {
		return nil, nil, errInvalid("exec without a command")
	}
	a, err := sv.lookup(req.App)
	if err != nil {
		return nil, nil, err
	}
	a.mu.Lock()
	running := a.running()
	var ctr *libcontainer.Container
	var spec *specs.Spec
	if running {
		if ctr, err = a.ctr(); err == nil {
			spec, err = a.appSpec()
		}
	}
	a.mu.Unlock()
	if !running {
		return nil, nil, errNotRunning(req.App)
	}
	if err != nil {
		return nil, nil, err
	}
	p := newProcess(spec.Process, false)
	p.Args = req.Exec.Args
	p.Env = envlist.Merge(spec.Process.Env, req.Exec.Env)
	if req.Exec.Cwd != "" {
		p.Cwd = req.Exec.Cwd
	}
	if req.Exec.User != "" {
		u, err := appuser.Lookup(spec.Root.Path, req.Exec.User)
		if err != nil {
			return nil, nil, errInvalid("exec in %q: %v", req.App, err)
		}
		p.UID, p.GID, p.AdditionalGroups = u.Uid, u.Gid, u.Sgids
	}
	eio := &execIO{}
	var childEnds []*os.File
	closeChild := func() {
		for _, f := range childEnds {
			f.Close()
		}
	}
	var consoleSk *os.File
	if req.Exec.TTY {
		parent, child, err := socketpair()
		if err != nil {
			return nil, nil, err
		}
		consoleSk, p.ConsoleSocket = parent, child
		childEnds = append(childEnds, child)
		p.ConsoleWidth, p.ConsoleHeight = 80, 24
	} else {
		pipes := make([]*os.File, 0, 6)
		for range 3 {
			r, w, err := os.Pipe()
			if err != nil {
				for _, f := range pipes {
					f.Close()
				}
				return nil, nil, fmt.Errorf("cannot create exec pipes: %w", err)
			}
			pipes = append(pipes, r, w)
		}
		eio.outR, p.Stdout = pipes[0], pipes[1]
		eio.errR, p.Stderr = pipes[2], pipes[3]
		childEnds = append(childEnds, pipes[1], pipes[3])
		if req.Exec.Stdin {
			p.Stdin, eio.stdin = pipes[4], pipes[5]
			childEnds = append(childEnds, pipes[4])
		} else {
			pipes[4].Close()
			pipes[5].Close()
		}
	}
	deadline := req.Deadline
	if deadline.IsZero() {
		deadline = time.Now().Add(execStartTimeout)
	}
	killed, err := sv.spawner.doWatched(deadline, lateStartGrace, func() error { return ctr.Run(p) })
	if len(killed) > 0 {
		slog.Warn("killed an exec still being set up past its deadline", "app", req.App, "pids", killed, "grace", lateStartGrace)
		if err == nil {
			p.Wait()
		}
		err = fmt.Errorf("its processes (pid %v) were killed %v past the deadline (%w)", killed, lateStartGrace, context.DeadlineExceeded)
	}
	if err != nil {
		closeChild()
		eio.closeAll()
		if consoleSk != nil {
			consoleSk.Close()
		}
		return nil, nil, fmt.Errorf("cannot exec %q in app %q: %w", req.Exec.Args, req.App, err)
	}
	closeChild()
	if consoleSk != nil {
		pty, err := recvFd(consoleSk)
		consoleSk.Close()
		if err != nil {
			p.Signal(sigKILL)
			p.Wait()
			return nil, nil, err
		}
		eio.pty = pty
		if req.Exec.Stdin {
			eio.stdin = pty
		}
	}
	return p, eio, nil
}

// pumpTo copies the process's output to the client as frames.
func (eio *execIO) pumpTo(fw *control.FrameWriter) {
	cp := func(r *os.File, typ byte) {
		if r == nil {
			return
		}
		eio.pumps.Add(1)
		go func() {
			defer eio.pumps.Done()
			io.Copy(fw.StreamWriter(typ), r)
		}()
	}
	cp(eio.outR, control.FrameStdout)
	cp(eio.errR, control.FrameStderr)
	cp(eio.pty, control.FrameStdout)
}

// wait waits for the output to drain (bounded: a background process may
// keep it open), then closes everything.
func (eio *execIO) wait(timeout time.Duration) {
	done := make(chan struct{})
	go func() { eio.pumps.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
	}
	eio.closeAll()
	<-done
}

func (eio *execIO) closeAll() {
	for _, f := range []*os.File{eio.outR, eio.errR, eio.pty} {
		if f != nil {
			f.Close()
		}
	}
	if eio.stdin != nil {
		eio.stdin.Close()
	}
}

// readClientFrames handles the client's frames: stdin data, stdin EOF and
// terminal resizes. It calls gone when the client goes away, also while
// the process does not read its stdin: the stdin data goes through a
// writer of its own, and while that one is blocked the connection is
// checked for a hang-up instead of being read.
func readClientFrames(conn net.Conn, br *bufio.Reader, stdin io.Writer, pty *os.File, gone, stdinClosed func()) {
	// A nil slice asks the writer to end stdin, after the data before it.
	in := make(chan []byte)
	defer close(in)
	go func() {
		for p := range in {
			switch {
			case p == nil:
				stdinClosed()
			case stdin != nil:
				stdin.Write(p)
			}
		}
	}()
	for {
		typ, payload, err := control.ReadFrame(br)
		if err != nil {
			gone()
			return
		}
		switch typ {
		case control.FrameStdin:
			if stdin != nil && len(payload) > 0 && !handOff(conn, in, payload) {
				gone()
				return
			}
		case control.FrameStdinClose:
			if !handOff(conn, in, nil) {
				gone()
				return
			}
		case control.FrameResize:
			var sz control.TermSize
			if json.Unmarshal(payload, &sz) == nil && pty != nil {
				resizePty(pty, sz)
			}
		}
	}
}

// hangupPoll is how often a client whose stdin is not being read is
// checked for a hang-up.
const hangupPoll = 100 * time.Millisecond

// handOff gives p to the stdin writer; it reports false if the client hung
// up while the writer was blocked.
func handOff(conn net.Conn, in chan<- []byte, p []byte) bool {
	select {
	case in <- p:
		return true
	default:
	}
	t := time.NewTicker(hangupPoll)
	defer t.Stop()
	for {
		select {
		case in <- p:
			return true
		case <-t.C:
			if hungUp(conn) {
				return false
			}
		}
	}
}

// hungUp reports whether the peer of conn closed its end, without reading:
// the data it sent before may still be unread.
func hungUp(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var hup bool
	rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
			hup = fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0
		}
	})
	return hup
}

func resizePty(pty *os.File, sz control.TermSize) {
	ws := &unix.Winsize{Col: sz.Width, Row: sz.Height}
	// SyscallConn, not Fd(): Fd() would make the file blocking.
	rc, err := pty.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		if err := unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, ws); err != nil {
			slog.Debug("cannot resize the terminal", "error", err)
		}
	})
}
