package main

/*
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

// rkt_pidns_in_userns runs before the Go runtime starts (a constructor, like
// libcontainer's nsexec), when the supervisor starts `stage1 pidns` for a
// pod with a user namespace: the process joins the pod's user namespace
// (only a single-threaded process may) and creates the shared PID namespace
// inside it, so that the apps, which join both, may mount their /proc. Its
// child is PID 1 of that namespace and goes on as `stage1 pidns`; this
// process waits for it and dies with it (and the child with this process).
__attribute__((constructor)) static void rkt_pidns_in_userns(void) {
	const char *path = getenv("_RKT_PIDNS_USERNS");
	if (path == NULL || *path == '\0')
		return;
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
		unsetenv("_RKT_PIDNS_USERNS");
		return; // PID 1 of the new namespace: on to `stage1 pidns`
	}
	close(alive[0]);
	for (;;) {
		int st;
		pid_t p = waitpid(child, &st, 0);
		if (p == child)
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
}
*/
import "C"

// pidnsUsernsEnv names the pod's user namespace for the constructor above.
const pidnsUsernsEnv = "_RKT_PIDNS_USERNS"
