package main

/*
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static int rkt_stop_fd = -1;

// rkt_stop_note writes the stop signal to the pipe, whatever thread takes
// it; a full pipe has a stop already.
static void rkt_stop_note(int sig) {
	int e = errno;
	unsigned char b = (unsigned char)sig;
	if (write(rkt_stop_fd, &b, 1) < 0)
		(void)0;
	errno = e;
}

static int rkt_stop_catch(int fd) {
	rkt_stop_fd = fd;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = rkt_stop_note;
	sa.sa_flags = SA_ONSTACK | SA_RESTART;
	sigfillset(&sa.sa_mask);
	int sigs[3] = {SIGTERM, SIGINT, SIGHUP};
	for (int i = 0; i < 3; i++)
		if (sigaction(sigs[i], &sa, NULL) < 0)
			return -errno;
	return 0;
}
*/
import "C"

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The stop signals (SIGTERM, SIGINT, SIGHUP) are not Go's: a C handler
// writes them to a pipe, which handleSignals reads. A signal taken by any
// thread is then in the pipe, which the supervisor passes on to `stage1
// lean` (refresh.go): none is lost in the exec. (Go's os/signal would
// hold it in a goroutine's hands, which the exec ends.)

// catchStopSignals installs the handler and returns the pipe's read end.
func catchStopSignals() (*os.File, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, fmt.Errorf("cannot create the stop signals' pipe: %w", err)
	}
	if rc := C.rkt_stop_catch(C.int(p[1])); rc != 0 {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, fmt.Errorf("cannot catch the stop signals: %w", syscall.Errno(-rc))
	}
	return os.NewFile(uintptr(p[0]), "stop-signals"), nil
}

// blockStopSignals blocks the stop signals on the calling thread (the main
// thread, about to exec `stage1 lean`): from then on the other threads
// take them into the pipe, and those that come during the exec wait, pending,
// for the lean image's signalfd. restore unblocks them.
func blockStopSignals() (restore func(), err error) {
	var stop, old unix.Sigset_t
	for _, sig := range []syscall.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP} {
		n := uint(sig) - 1
		stop.Val[n/64] |= 1 << (n % 64)
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &stop, &old); err != nil {
		return nil, fmt.Errorf("cannot block the stop signals: %w", err)
	}
	return func() { unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil) }, nil
}
