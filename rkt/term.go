package main

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/stage0"
)

// rawTerminal puts the terminal on fd into raw mode and returns a function
// restoring it; it does nothing when fd is not a terminal.
func rawTerminal(fd int) (restore func()) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {}
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN] = 1
	raw.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return func() {}
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, old) }
}

// terminalSizes reports the size of the terminal on fd now and on every
// SIGWINCH until stop is called; nil when fd is not a terminal.
func terminalSizes(fd int) (sizes <-chan stage0.TermSize, stop func()) {
	if _, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err != nil {
		return nil, func() {}
	}
	ch := make(chan stage0.TermSize, 1)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGWINCH)
	done := make(chan struct{})
	send := func() {
		if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
			select {
			case ch <- stage0.TermSize{Width: ws.Col, Height: ws.Row}:
			default:
			}
		}
	}
	send()
	go func() {
		for {
			select {
			case <-done:
				return
			case <-sig:
				send()
			}
		}
	}()
	return ch, func() { signal.Stop(sig); close(done) }
}

// isTerminalFd reports whether fd is a terminal.
func isTerminalFd(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}
