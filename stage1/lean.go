package main

/*
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// `stage1 lean` is an idle supervisor: the same process, re-executed by
// the Go supervisor when nothing is in flight (refresh.go), all C and run
// from this constructor before the Go runtime starts. It only copies its
// apps' output into their logs. Anything else (a connection on the control
// socket, an app's exit, SIGTERM/SIGINT/SIGHUP: pending since the exec, in
// its signalfd, or taken by the Go supervisor's threads, in the pipe of
// --stop-fd) makes it exec `stage1 resume`, the Go supervisor, which
// handles it.

#define LEAN_MAX_LINE (16 * 1024) // maxLogLine of logwriter.go

struct lean_stream {
	int fd, log, open;
	const char *name;
	size_t len;
	char buf[LEAN_MAX_LINE + 1];
};

struct lean_app {
	pid_t pid;
	struct lean_stream *out, *err;
};

// lean_time formats the time as Go's time.RFC3339Nano in local time.
static size_t lean_time(char *b, size_t cap) {
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(b, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	if (ts.tv_nsec != 0) {
		n += snprintf(b + n, cap - n, ".%09ld", ts.tv_nsec);
		while (b[n - 1] == '0')
			n--;
	}
	long off = tm.tm_gmtoff;
	if (off == 0)
		return n + snprintf(b + n, cap - n, "Z");
	char sign = off < 0 ? '-' : '+';
	if (off < 0)
		off = -off;
	return n + snprintf(b + n, cap - n, "%c%02ld:%02ld", sign, off / 3600, (off % 3600) / 60);
}

// lean_entry writes one CRI log entry, as LogWriter.WriteEntry does.
static void lean_entry(struct lean_stream *s, int partial, const char *line, size_t n) {
	char ts[64], tag[16];
	size_t tn = lean_time(ts, sizeof ts);
	int gn = snprintf(tag, sizeof tag, " %s %c ", s->name, partial ? 'P' : 'F');
	struct iovec iov[4] = {{ts, tn}, {tag, (size_t)gn}, {(void *)line, n}, {"\n", 1}};
	if (writev(s->log, iov, 4) < 0 && errno != EINTR)
		return; // as the Go pumps, never stop the app's output for the log
}

// lean_split adds data to the stream's pending line and logs what is
// complete, as lineSplitter.Write does.
static void lean_split(struct lean_stream *s, const char *p, size_t n) {
	while (n > 0) {
		size_t k = sizeof s->buf - s->len;
		if (k > n)
			k = n;
		memcpy(s->buf + s->len, p, k);
		s->len += k;
		p += k;
		n -= k;
		for (;;) {
			char *nl = memchr(s->buf, '\n', s->len);
			size_t used;
			if (nl != NULL && (size_t)(nl - s->buf) <= LEAN_MAX_LINE) {
				size_t i = nl - s->buf, m = i;
				if (m > 0 && s->buf[m - 1] == '\r')
					m--;
				lean_entry(s, 0, s->buf, m);
				used = i + 1;
			} else if (s->len >= LEAN_MAX_LINE) {
				lean_entry(s, 1, s->buf, LEAN_MAX_LINE);
				used = LEAN_MAX_LINE;
			} else {
				break;
			}
			memmove(s->buf, s->buf + used, s->len - used);
			s->len -= used;
		}
	}
}

// lean_flush logs a pending partial line as a P entry (the Go supervisor
// goes on from an empty one).
static void lean_flush(struct lean_stream *s) {
	if (s != NULL && s->len > 0) {
		lean_entry(s, 1, s->buf, s->len);
		s->len = 0;
	}
}

// LEAN_PUMP_READS bounds what lean_pump reads at a time: an app that
// writes faster than its log is written must not keep the loop from the
// signals, the control socket and the other apps' output and exits (the
// epoll is level-triggered: the stream comes back on its next turn).
#define LEAN_PUMP_READS 4

// lean_pump reads what the stream has, up to LEAN_PUMP_READS reads; 0:
// nothing more for now (or its turn is over), -1: ended.
static int lean_pump(struct lean_stream *s) {
	static char rbuf[16384];
	for (int i = 0; i < LEAN_PUMP_READS; i++) {
		ssize_t n = read(s->fd, rbuf, sizeof rbuf);
		if (n > 0) {
			lean_split(s, rbuf, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		return -1; // EOF, or EIO from a pty whose other side closed
	}
	return 0;
}

static struct lean_stream *lean_stream_new(int fd, int log, const char *name) {
	if (fd < 0)
		return NULL;
	struct lean_stream *s = calloc(1, sizeof *s);
	if (s == NULL)
		return NULL;
	s->fd = fd;
	s->log = log;
	s->name = name;
	s->open = 1;
	return s;
}

static int lean_exited(pid_t pid) {
	siginfo_t si;
	memset(&si, 0, sizeof si);
	if (waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return errno != EINTR; // ECHILD: already gone
	return si.si_pid == pid;
}

// lean_stops reads the stop signals that the Go supervisor's handler wrote
// to its pipe (package stopsig) up to its end; the last one, or 0.
static int lean_stops(int fd) {
	unsigned char b[64];
	int stop = 0;
	ssize_t n;
	while ((n = read(fd, b, sizeof b)) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			stop = b[n - 1];
	return stop;
}

static void rkt_lean(int argc, char **argv) {
	const char *podDir = NULL, *stateFd = NULL;
	int listener = -1, stopFd = -1, napps = 0;
	struct lean_app *apps = calloc((size_t)argc, sizeof *apps);
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "--pod-dir=", 10) == 0) {
			podDir = a;
		} else if (strncmp(a, "--state-fd=", 11) == 0) {
			stateFd = a;
		} else if (strncmp(a, "--listener=", 11) == 0) {
			listener = atoi(a + 11);
		} else if (strncmp(a, "--stop-fd=", 10) == 0) {
			stopFd = atoi(a + 10);
		} else if (strncmp(a, "--app=", 6) == 0 && apps != NULL) {
			int pid, log, out, err;
			if (sscanf(a + 6, "%d,%d,%d,%d", &pid, &log, &out, &err) == 4) {
				apps[napps].pid = pid;
				apps[napps].out = lean_stream_new(out, log, "stdout");
				apps[napps].err = lean_stream_new(err, log, "stderr");
				napps++;
			}
		}
	}
	tzset();
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGCHLD);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	// A log past RLIMIT_FSIZE fails with EFBIG, as in the Go supervisor
	// (whose runtime ignores SIGXFSZ), instead of killing the supervisor.
	signal(SIGXFSZ, SIG_IGN);
	int stop = 0; // the signal that asks the pod to stop
	int sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || ep < 0 || podDir == NULL || stateFd == NULL || listener < 0) {
		perror("stage1 lean: cannot start; resuming");
		goto resume;
	}
	struct epoll_event ev = {.events = EPOLLIN};
	ev.data.ptr = NULL;
	int watched = epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev) == 0;
	ev.data.ptr = &sfd;
	watched = watched && epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev) == 0;
	if (!watched) { // it would sleep through calls and stop signals
		perror("stage1 lean: cannot watch the socket and signals; resuming");
		goto resume;
	}
	if (stopFd >= 0) {
		// complete: the exec ended the threads that write it
		stop = lean_stops(stopFd);
		close(stopFd);
		stopFd = -1;
		if (stop)
			goto resume;
	}
	for (int i = 0; i < napps; i++) {
		struct lean_stream *ss[2] = {apps[i].out, apps[i].err};
		for (int j = 0; j < 2; j++) {
			if (ss[j] == NULL)
				continue;
			ev.data.ptr = ss[j];
			if (epoll_ctl(ep, EPOLL_CTL_ADD, ss[j]->fd, &ev) < 0) {
				// unread, the app would block on a full pipe
				perror("stage1 lean: cannot watch an app's output; resuming");
				goto resume;
			}
		}
	}
	for (;;) {
		// an app that exited before (or while) this image started
		for (int i = 0; i < napps; i++)
			if (lean_exited(apps[i].pid))
				goto resume;
		struct epoll_event evs[16];
		int n = epoll_wait(ep, evs, 16, -1);
		if (n < 0 && errno != EINTR)
			goto resume;
		for (int k = 0; k < n; k++) {
			void *p = evs[k].data.ptr;
			if (p == NULL)
				goto resume; // a connection
			if (p == &sfd) {
				struct signalfd_siginfo si;
				while (read(sfd, &si, sizeof si) == sizeof si)
					if (si.ssi_signo != SIGCHLD)
						stop = (int)si.ssi_signo;
				if (stop)
					goto resume;
				continue; // SIGCHLD: the loop checks the apps
			}
			struct lean_stream *s = p;
			if (lean_pump(s) < 0) {
				lean_flush(s);
				epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL);
				s->open = 0;
			}
		}
	}
resume:
	for (int i = 0; i < napps; i++) {
		if (apps[i].out != NULL && apps[i].out->open)
			lean_pump(apps[i].out);
		if (apps[i].err != NULL && apps[i].err->open)
			lean_pump(apps[i].err);
		lean_flush(apps[i].out);
		lean_flush(apps[i].err);
	}
	if (stopFd >= 0) { // not read if the loop never started
		int s = lean_stops(stopFd);
		if (s != 0)
			stop = s;
		close(stopFd);
	}
	if (sfd >= 0) {
		struct signalfd_siginfo si;
		while (read(sfd, &si, sizeof si) == sizeof si)
			if (si.ssi_signo != SIGCHLD)
				stop = (int)si.ssi_signo;
	}
	// The signals stay blocked through the exec: those that come now are
	// pending for `stage1 resume`, whose constructor (package stopsig)
	// catches them into a pipe before it unblocks them.
	char sigArg[32];
	snprintf(sigArg, sizeof sigArg, "--signal=%d", stop);
	char *args[] = {argv[0], "resume", (char *)podDir, (char *)stateFd, sigArg, NULL};
	if (podDir == NULL || stateFd == NULL) {
		fputs("stage1 lean: no --pod-dir or --state-fd\n", stderr);
		_exit(1);
	}
	signal(SIGXFSZ, SIG_DFL); // as the Go image left it
	// An exec that fails for want of memory may pass a moment later: the
	// supervisor's end is its pod's.
	for (int attempt = 0; attempt < 30; attempt++) {
		execv("/proc/self/exe", args);
		perror("stage1 lean: cannot exec the supervisor");
		if (errno != ENOMEM && errno != EAGAIN)
			break;
		sleep(1);
	}
	_exit(1);
}

__attribute__((constructor)) static void rkt_lean_main(int argc, char **argv) {
	if (argc >= 2 && strcmp(argv[1], "lean") == 0)
		rkt_lean(argc, argv);
}
*/
import "C"
