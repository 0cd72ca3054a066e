package main

/*
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

// `stage1 pidns` is the init (PID 1) of a pod's shared PID namespace. It is
// all C and runs in this constructor, before the Go runtime starts, and
// never returns: a Go process idles at ~7 MiB RSS, this one at a few
// hundred KiB (as the pause container's init does).

// rkt_pidns_join_net moves the holder into the pod's network namespace
// (before it joins the pod's user namespace, where it could no longer):
// every app sees the holder as its /proc/1, and /proc/1/net is the
// holder's namespace's.
static void rkt_pidns_join_net(const char *path) {
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
		perror("stage1 pidns: join the pod network namespace");
		_exit(1);
	}
	close(fd);
}

// rkt_pidns_confine leaves PID 1 nothing an app of the pod could use
// through /proc/1 (an app with CAP_SYS_PTRACE may open /proc/1/root and
// attach to it): an empty root directory (and so no mounts in
// /proc/1/mountinfo), no capabilities, no way to gain any, not dumpable.
static void rkt_pidns_confine(const char *root) {
	if (chroot(root) < 0 || chdir("/") < 0) {
		perror("stage1 pidns: enter the empty root");
		_exit(1);
	}
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	for (int cap = 0; cap < 64; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno == EINVAL)
			break; // past the kernel's last capability
	}
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct none[2];
	memset(none, 0, sizeof none);
	if (syscall(SYS_capset, &hdr, none) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		perror("stage1 pidns: drop privileges");
		_exit(1);
	}
}

// rkt_pidns_reap reaps orphans until the supervisor SIGKILLs it; no
// other signal ends it. When it dies the kernel kills every process left
// in the namespace.
static void rkt_pidns_reap(void) {
	if (getpid() != 1) {
		fputs("stage1 pidns: not the init of a PID namespace\n", stderr);
		_exit(2);
	}
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		siginfo_t si;
		if (sigwaitinfo(&all, &si) < 0 || si.si_signo != SIGCHLD)
			continue;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
}

// rkt_pidns_in_userns is for a pod with a user namespace: the process joins
// the pod's user namespace (only a single-threaded process may) and creates
// the shared PID namespace inside it, so that the apps, which join both,
// may mount their /proc. Its child is PID 1 of that namespace and returns
// to reap; this process waits for it and dies with it (and the child with
// this process).
static void rkt_pidns_in_userns(const char *path) {
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror("stage1 pidns: open the pod user namespace");
		_exit(1);
	}
	if (setns(fd, CLONE_NEWUSER) < 0) {
		perror("stage1 pidns: join the pod user namespace");
		_exit(1);
	}
	close(fd);
	if (unshare(CLONE_NEWPID) < 0) {
		perror("stage1 pidns: create the PID namespace");
		_exit(1);
	}
	// The pipe tells the child whether this process died before the
	// child's death signal was armed: its write end closes with us.
	int alive[2];
	if (pipe2(alive, O_CLOEXEC) < 0) {
		perror("stage1 pidns: pipe");
		_exit(1);
	}
	pid_t child = fork();
	if (child < 0) {
		perror("stage1 pidns: fork");
		_exit(1);
	}
	if (child == 0) {
		close(alive[1]);
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		fcntl(alive[0], F_SETFL, O_NONBLOCK);
		char c;
		if (read(alive[0], &c, 1) == 0)
			_exit(1); // orphaned already
		close(alive[0]);
		return;
	}
	close(alive[0]);
	for (;;) {
		int st;
		pid_t p = waitpid(child, &st, 0);
		if (p == child)
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
}

// rkt_pidns_last_pid is `stage1 pidns-last-pid N`, started in a pod's PID
// namespace (pidnsHolder.raiseLastPID): from now on the namespace hands out
// PIDs above N, unless it already does. ns_last_pid is the namespace's of
// the writer, whatever /proc is mounted.
static void rkt_pidns_last_pid(const char *arg) {
	char *end;
	errno = 0;
	unsigned long want = strtoul(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || want > 1UL << 22) {
		fprintf(stderr, "stage1 pidns-last-pid: bad PID %s\n", arg);
		_exit(2);
	}
	int fd = open("/proc/sys/kernel/ns_last_pid", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror("stage1 pidns-last-pid: open ns_last_pid");
		_exit(1);
	}
	char buf[32];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	if (n <= 0) {
		perror("stage1 pidns-last-pid: read ns_last_pid");
		_exit(1);
	}
	buf[n] = '\0';
	if (strtoul(buf, NULL, 10) < want) {
		int len = snprintf(buf, sizeof buf, "%lu", want);
		if (pwrite(fd, buf, len, 0) != len) {
			perror("stage1 pidns-last-pid: write ns_last_pid");
			_exit(1);
		}
	}
	_exit(0);
}

__attribute__((constructor)) static void rkt_pidns(int argc, char **argv) {
	if (argc == 3 && strcmp(argv[1], "pidns-last-pid") == 0)
		rkt_pidns_last_pid(argv[2]);
	if (argc < 2 || strcmp(argv[1], "pidns") != 0)
		return;
	// Only SIGKILL ends the holder, PID 1 or (in a user namespace) its
	// parent: the namespace dies with it, so a stop signal sent to the
	// supervisor's process group must not end it before the supervisor
	// stops the apps.
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	const char *netns = getenv("_RKT_PIDNS_NETNS");
	if (netns != NULL && *netns != '\0')
		rkt_pidns_join_net(netns);
	const char *userns = getenv("_RKT_PIDNS_USERNS");
	if (userns != NULL && *userns != '\0')
		rkt_pidns_in_userns(userns); // returns in PID 1, its child
	const char *root = getenv("_RKT_PIDNS_ROOT");
	if (root == NULL || *root == '\0') {
		fputs("stage1 pidns: no empty root given\n", stderr);
		_exit(2);
	}
	rkt_pidns_confine(root);
	rkt_pidns_reap();
}
*/
import "C"

// The constructor's inputs: the pod's user and network namespaces, and the
// empty directory the holder takes as its root.
const (
	pidnsUsernsEnv = "_RKT_PIDNS_USERNS"
	pidnsNetnsEnv  = "_RKT_PIDNS_NETNS"
	pidnsRootEnv   = "_RKT_PIDNS_ROOT"
)
