package main

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// appIO holds the supervisor's ends of an app's stdio until the app runs,
// then pumps its output into the log and to attached clients.
type appIO struct {
	a          *app
	lw         *LogWriter
	childEnds  []*os.File // closed once the process has them
	outR, errR *os.File   // pipe read ends (no tty)
	stdinW     *os.File   // pipe write end, when App.Stdin (no tty)
	consoleSk  *os.File   // our end of the console socket (tty)
	pty        *os.File   // pty master (tty)
	outLS      *lineSplitter
	errLS      *lineSplitter
	pumps      sync.WaitGroup
}

// setupIO wires p's stdio: pipes, or a console socket for a tty.
func (a *app) setupIO(p *libcontainer.Process, lw *LogWriter) (*appIO, error) {
	aio := &appIO{a: a, lw: lw}
	if a.tty() {
		parent, child, err := socketpair()
		if err != nil {
			return nil, err
		}
		aio.consoleSk = parent
		aio.childEnds = append(aio.childEnds, child)
		p.ConsoleSocket = child
		return aio, nil
	}
	var err error
	var w *os.File
	if aio.outR, w, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("cannot create stdout pipe: %w", err)
	}
	p.Stdout = w
	aio.childEnds = append(aio.childEnds, w)
	if aio.errR, w, err = os.Pipe(); err != nil {
		aio.abort()
		return nil, fmt.Errorf("cannot create stderr pipe: %w", err)
	}
	p.Stderr = w
	aio.childEnds = append(aio.childEnds, w)
	if a.manifest.Stdin {
		r, w, err := os.Pipe()
		if err != nil {
			aio.abort()
			return nil, fmt.Errorf("cannot create stdin pipe: %w", err)
		}
		p.Stdin = r
		aio.childEnds = append(aio.childEnds, r)
		aio.stdinW = w
	}
	return aio, nil
}

func socketpair() (*os.File, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot create console socket pair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "console-parent"), os.NewFile(uintptr(fds[1]), "console-child"), nil
}

func (aio *appIO) closeChildEnds() {
	for _, f := range aio.childEnds {
		f.Close()
	}
	aio.childEnds = nil
}

// abort releases everything after a failed start.
func (aio *appIO) abort() {
	aio.closeChildEnds()
	for _, f := range []*os.File{aio.outR, aio.errR, aio.stdinW, aio.consoleSk, aio.pty} {
		if f != nil {
			f.Close()
		}
	}
}

// started runs once the process runs: takes the pty master, closes the
// child's ends and starts the output pumps. a.mu is held.
func (aio *appIO) started() error {
	aio.closeChildEnds()
	a := aio.a
	a.stdout, a.stderr = newBroadcaster(), newBroadcaster()
	if aio.consoleSk != nil {
		pty, err := recvFd(aio.consoleSk)
		aio.consoleSk.Close()
		aio.consoleSk = nil
		if err != nil {
			return err
		}
		aio.pty = pty
		a.pty = pty
		if a.manifest.Stdin {
			a.stdin = pty
		}
	} else if aio.stdinW != nil {
		a.stdin = aio.stdinW
	}
	aio.outLS, aio.errLS = newLineSplitter(aio.lw, "stdout"), newLineSplitter(aio.lw, "stderr")
	aio.startPumps()
	return nil
}

// startPumps copies the output into the log and to attached clients.
func (aio *appIO) startPumps() {
	a := aio.a
	run := func(r *os.File, ls *lineSplitter, b *broadcaster) {
		aio.pumps.Add(1)
		go func() {
			defer aio.pumps.Done()
			pump(r, ls, b)
		}()
	}
	if aio.pty != nil {
		run(aio.pty, aio.outLS, a.stdout)
		return
	}
	run(aio.outR, aio.outLS, a.stdout)
	run(aio.errR, aio.errLS, a.stderr)
}

// pausePumps stops the pumps without losing output: what they have not
// read stays in the pipes, a partial line in the splitters. It fails (and
// stops nothing) if an output does not take deadlines.
func (aio *appIO) pausePumps() error {
	outs := aio.outputs()
	for i, f := range outs {
		if err := f.SetReadDeadline(time.Unix(1, 0)); err != nil {
			for _, g := range outs[:i] {
				g.SetReadDeadline(time.Time{})
			}
			return fmt.Errorf("cannot pause the output of app %q: %w", aio.a.name, err)
		}
	}
	aio.pumps.Wait()
	for _, f := range outs {
		f.SetReadDeadline(time.Time{})
	}
	return nil
}

func (aio *appIO) outputs() []*os.File {
	if aio.pty != nil {
		return []*os.File{aio.pty}
	}
	return []*os.File{aio.outR, aio.errR}
}

// wait waits up to timeout for the output to end after the app exited, then
// closes our ends.
func (aio *appIO) wait(timeout time.Duration) {
	done := make(chan struct{})
	go func() { aio.pumps.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		slog.Debug("app output still open after exit; closing it", "app", aio.a.name, "after", timeout)
	}
	for _, f := range []*os.File{aio.outR, aio.errR, aio.stdinW, aio.pty} {
		if f != nil {
			f.Close()
		}
	}
	<-done
}

// recvFd receives one file descriptor (the pty master libcontainer sends).
func recvFd(sock *os.File) (*os.File, error) {
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("cannot receive the console: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("cannot parse the console message: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("cannot parse the console fd: %v", err)
	}
	// Non-blocking, so the file joins Go's poller and Close interrupts a Read.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		return nil, fmt.Errorf("cannot make the console non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), string(buf[:n])), nil
}
