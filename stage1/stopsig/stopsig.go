// Package stopsig catches a supervisor's stop signals (SIGTERM, SIGINT,
// SIGHUP) in a C handler that writes them to a pipe, from whatever thread
// takes them. Go's os/signal would hold a signal in a goroutine's hands,
// which an exec ends; the pipe is passed on through the exec of `stage1
// lean` (stage1/refresh.go) and, for `stage1 resume`, made before the Go
// runtime starts.
//
// The Go runtime's own handler for these signals, which exits, is never
// installed in `stage1 resume` (see sigaction below); nor does stage1 use
// os/signal for them.
package stopsig

/*
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <dirent.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
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

// The stop signals go to any thread that does not block them, and Go
// unblocks them on each of its threads. One that took a signal and is
// ended by the exec before its handler ran would lose it: before the exec,
// every other thread gets RKT_QUIET_SIG, whose handler blocks the stop
// signals in the mask that its return restores. A thread runs a stop
// handler it was given before this one (each blocks all signals while it
// runs), so once all answered, the stop signals taken are in the pipe and
// the next ones go to the calling thread only.
#define RKT_QUIET_SIG (SIGRTMAX - 3)

static volatile int rkt_quiet_acks;

static void rkt_quiet_note(int sig, siginfo_t *si, void *ucv) {
	ucontext_t *uc = ucv;
	sigaddset(&uc->uc_sigmask, SIGTERM);
	sigaddset(&uc->uc_sigmask, SIGINT);
	sigaddset(&uc->uc_sigmask, SIGHUP);
	__atomic_add_fetch(&rkt_quiet_acks, 1, __ATOMIC_SEQ_CST);
}

// rkt_quiet_others returns how many threads did not answer within ~100 ms
// (ended meanwhile), or -errno.
static int rkt_quiet_others(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = rkt_quiet_note;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(RKT_QUIET_SIG, &sa, NULL) < 0)
		return -errno;
	DIR *d = opendir("/proc/self/task");
	if (d == NULL)
		return -errno;
	pid_t pid = getpid(), self = (pid_t)syscall(SYS_gettid);
	int sent = 0;
	__atomic_store_n(&rkt_quiet_acks, 0, __ATOMIC_SEQ_CST);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		pid_t tid = (pid_t)atoi(e->d_name);
		if (tid > 0 && tid != self && syscall(SYS_tgkill, pid, tid, RKT_QUIET_SIG) == 0)
			sent++;
	}
	closedir(d);
	struct timespec ts = {0, 100000};
	for (int i = 0; i < 1000 && __atomic_load_n(&rkt_quiet_acks, __ATOMIC_SEQ_CST) < sent; i++)
		nanosleep(&ts, NULL);
	return sent - __atomic_load_n(&rkt_quiet_acks, __ATOMIC_SEQ_CST);
}

// rkt_stop_early is the read end of the pipe that the constructor below
// made for `stage1 resume`, -1 if none.
static int rkt_stop_early = -1;

// rkt_stop_hold keeps the stop signals with rkt_stop_note.
static volatile int rkt_stop_hold;

extern int __sigaction(int, const struct sigaction *, struct sigaction *);

// sigaction stands for libc's (weak) one in this binary. The Go runtime
// installs its signal handlers through it (runtime/cgo) when it starts,
// and its handler exits on SIGTERM, SIGINT and SIGHUP: while
// rkt_stop_hold is set, those keep rkt_stop_note.
int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
	if (act != NULL && rkt_stop_hold && (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) &&
	    act->sa_handler != rkt_stop_note)
		return __sigaction(sig, NULL, old);
	return __sigaction(sig, act, old);
}

// rkt_stop_resume runs before the Go runtime starts. `stage1 lean` execs
// `stage1 resume` with the stop signals blocked, so those sent during the
// exec are pending: they go to the pipe once unblocked here, and so do
// those that come while the Go runtime starts. (Go starts with, and passes
// on to the processes it starts, the signal mask it finds: it must be
// empty.)
__attribute__((constructor)) static void rkt_stop_resume(int argc, char **argv) {
	if (argc < 2 || strcmp(argv[1], "resume") != 0)
		return;
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0) {
		if (rkt_stop_catch(p[1]) == 0) {
			rkt_stop_early = p[0];
			rkt_stop_hold = 1;
		} else {
			close(p[0]);
			close(p[1]);
		}
	}
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGCHLD);
	sigprocmask(SIG_UNBLOCK, &sigs, NULL);
}

static int rkt_stop_take_early(void) {
	int fd = rkt_stop_early;
	rkt_stop_early = -1;
	return fd;
}
*/
import "C"

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Catch installs the handler and returns the pipe's read end: in `stage1
// resume`, the pipe made before the Go runtime started, with the signals
// taken since.
func Catch() (*os.File, error) {
	if fd := int(C.rkt_stop_take_early()); fd >= 0 {
		return os.NewFile(uintptr(fd), "stop-signals"), nil
	}
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

// Block blocks the stop signals on every other thread, then on the calling
// one (about to exec `stage1 lean`): those taken before are in the pipe,
// those that come later stay pending through the exec. restore unblocks
// them on the calling thread; quiet is how many threads did not answer
// (ended meanwhile).
func Block() (restore func(), quiet int, err error) {
	rc := int(C.rkt_quiet_others())
	if rc < 0 {
		return nil, 0, fmt.Errorf("cannot block the stop signals on the other threads: %w", syscall.Errno(-rc))
	}
	var stop, old unix.Sigset_t
	for _, sig := range []syscall.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP} {
		n := uint(sig) - 1
		stop.Val[n/64] |= 1 << (n % 64)
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &stop, &old); err != nil {
		return nil, 0, fmt.Errorf("cannot block the stop signals: %w", err)
	}
	return func() { unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil) }, rc, nil
}
