package main

/*
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

// `stage1 attach-mounts TARGET...` attaches detached mounts (open_tree
// clones, fds 4, 5, ...: one per TARGET) at their targets in the mount
// namespace of the process whose pidfd is fd 3: a pod's supervisor that
// is not in the caller's mount namespace. A target that is a mount point
// there already is left as it is. All C, in this constructor: only a
// single-threaded process may join a mount namespace.
static void rkt_attach_mounts(int n, char **targets) {
	if (setns(3, CLONE_NEWNS) < 0) {
		perror("stage1 attach-mounts: join the pod's mount namespace");
		_exit(1);
	}
	for (int i = 0; i < n; i++) {
		struct statx st;
		if (statx(AT_FDCWD, targets[i], AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &st) < 0) {
			fprintf(stderr, "stage1 attach-mounts: cannot stat %s: %s\n", targets[i], strerror(errno));
			_exit(1);
		}
		if (st.stx_attributes_mask & st.stx_attributes & STATX_ATTR_MOUNT_ROOT)
			continue;
		if (syscall(SYS_move_mount, 4 + i, "", AT_FDCWD, targets[i], MOVE_MOUNT_F_EMPTY_PATH) < 0) {
			fprintf(stderr, "stage1 attach-mounts: cannot mount on %s: %s\n", targets[i], strerror(errno));
			_exit(1);
		}
	}
	_exit(0);
}

__attribute__((constructor)) static void rkt_attach_mounts_main(int argc, char **argv) {
	if (argc >= 2 && strcmp(argv[1], "attach-mounts") == 0)
		rkt_attach_mounts(argc - 2, argv + 2);
}
*/
import "C"
