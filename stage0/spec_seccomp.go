package stage0

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/fileperm"
)

// seccompFor returns the seccomp filter of an app (nil: none).
func seccompFor(o AppOptions) (*specs.LinuxSeccomp, error) {
	if o.SeccompSpec != nil {
		return o.SeccompSpec, nil
	}
	if o.Privileged {
		return nil, nil
	}
	switch p := o.Seccomp; {
	case p == "", p == SeccompDefault, p == "docker/default":
		caps, err := capabilities(o)
		if err != nil {
			return nil, err
		}
		return DefaultSeccomp(caps.Bounding), nil
	case p == SeccompUnconfined:
		return nil, nil
	case strings.HasPrefix(p, "localhost/"):
		return loadSeccomp(strings.TrimPrefix(p, "localhost/"))
	default:
		return nil, fmt.Errorf("unknown seccomp profile %q: %w", p, ErrInvalid)
	}
}

// loadSeccomp reads a JSON profile (OCI LinuxSeccomp; Docker's format has
// the same field names for what matters). A profile that is missing, no
// regular file, too large or malformed is ErrInvalid: the request named it.
func loadSeccomp(path string) (*specs.LinuxSeccomp, error) {
	b, err := readSeccompProfile(path)
	if err != nil {
		return nil, err
	}
	var sc specs.LinuxSeccomp
	if err := json.Unmarshal(b, &sc); err != nil {
		return nil, fmt.Errorf("cannot parse localhost seccomp profile %q: %w (%w)", path, ErrInvalid, err)
	}
	if sc.DefaultAction == "" {
		return nil, fmt.Errorf("localhost seccomp profile %q has no defaultAction: %w", path, ErrInvalid)
	}
	return &sc, nil
}

// maxSeccompProfile bounds a localhost profile (Docker's default is < 64 KiB).
const maxSeccompProfile = 1 << 20

// readSeccompProfile reads a regular file (openHostRegular) of at most
// maxSeccompProfile bytes.
func readSeccompProfile(path string) ([]byte, error) {
	f, err := openHostRegular(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fileperm.ErrNotRegular) {
		return nil, fmt.Errorf("cannot read localhost seccomp profile %q: %w (%w)", path, ErrInvalid, err)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read localhost seccomp profile %q: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSeccompProfile+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read localhost seccomp profile %q: %w", path, err)
	}
	if len(b) > maxSeccompProfile {
		return nil, fmt.Errorf("cannot read localhost seccomp profile %q: %w (larger than %d bytes)", path, ErrInvalid, maxSeccompProfile)
	}
	return b, nil
}

// defaultSyscalls are allowed by the default profile for every app: the
// usual system interface minus what manipulates the kernel, the clock,
// modules, namespaces, mounts, keyrings and tracing.
var defaultSyscalls = []string{
	"accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk", "cachestat", "capget", "capset",
	"chdir", "chmod", "chown", "chown32", "clock_adjtime", "clock_adjtime64", "clock_getres",
	"clock_getres_time64", "clock_gettime", "clock_gettime64", "clock_nanosleep",
	"clock_nanosleep_time64", "close", "close_range", "connect", "copy_file_range", "creat", "dup",
	"dup2", "dup3", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_pwait",
	"epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2", "execve", "execveat",
	"exit", "exit_group", "faccessat", "faccessat2", "fadvise64", "fadvise64_64", "fallocate",
	"fanotify_mark", "fchdir", "fchmod", "fchmodat", "fchmodat2", "fchown", "fchown32", "fchownat",
	"fcntl", "fcntl64", "fdatasync", "fgetxattr", "flistxattr", "flock", "fork", "fremovexattr",
	"fsetxattr", "fstat", "fstat64", "fstatat64", "fstatfs", "fstatfs64", "fsync", "ftruncate",
	"ftruncate64", "futex", "futex_requeue", "futex_time64", "futex_wait", "futex_waitv",
	"futex_wake", "futimesat", "getcpu", "getcwd", "getdents", "getdents64", "getegid",
	"getegid32", "geteuid", "geteuid32", "getgid", "getgid32", "getgroups", "getgroups32",
	"getitimer", "getpeername", "getpgid", "getpgrp", "getpid", "getppid", "getpriority",
	"getrandom", "getresgid", "getresgid32", "getresuid", "getresuid32", "getrlimit",
	"get_robust_list", "getrusage", "getsid", "getsockname", "getsockopt", "get_thread_area",
	"gettid", "gettimeofday", "getuid", "getuid32", "getxattr", "inotify_add_watch",
	"inotify_init", "inotify_init1", "inotify_rm_watch", "io_cancel", "ioctl", "io_destroy",
	"io_getevents", "io_pgetevents", "io_pgetevents_time64", "ioprio_get", "ioprio_set",
	"io_setup", "io_submit", "ipc", "kill", "landlock_add_rule", "landlock_create_ruleset",
	"landlock_restrict_self", "lchown", "lchown32", "lgetxattr", "link", "linkat", "listen",
	"listxattr", "llistxattr", "_llseek", "lremovexattr", "lseek", "lsetxattr", "lstat",
	"lstat64", "madvise", "map_shadow_stack", "membarrier", "memfd_create", "memfd_secret",
	"mincore", "mkdir", "mkdirat", "mknod", "mknodat", "mlock", "mlock2", "mlockall", "mmap",
	"mmap2", "mprotect", "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive",
	"mq_timedreceive_time64", "mq_timedsend", "mq_timedsend_time64", "mq_unlink", "mremap",
	"msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock", "munlockall", "munmap",
	"name_to_handle_at", "nanosleep", "newfstatat", "_newselect", "open", "openat", "openat2",
	"pause", "pidfd_open", "pidfd_send_signal", "pipe", "pipe2", "pkey_alloc", "pkey_free",
	"pkey_mprotect", "poll", "ppoll", "ppoll_time64", "prctl", "pread64", "preadv", "preadv2",
	"prlimit64", "process_mrelease", "pselect6", "pselect6_time64", "pwrite64", "pwritev",
	"pwritev2", "read", "readahead", "readlink", "readlinkat", "readv", "recv", "recvfrom",
	"recvmmsg", "recvmmsg_time64", "recvmsg", "remap_file_pages", "removexattr", "rename",
	"renameat", "renameat2", "restart_syscall", "rmdir", "rseq", "rt_sigaction", "rt_sigpending",
	"rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait",
	"rt_sigtimedwait_time64", "rt_tgsigqueueinfo", "sched_getaffinity", "sched_getattr",
	"sched_getparam", "sched_get_priority_max", "sched_get_priority_min", "sched_getscheduler",
	"sched_rr_get_interval", "sched_rr_get_interval_time64", "sched_setaffinity",
	"sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp", "select",
	"semctl", "semget", "semop", "semtimedop", "semtimedop_time64", "send", "sendfile",
	"sendfile64", "sendmmsg", "sendmsg", "sendto", "setfsgid", "setfsgid32", "setfsuid",
	"setfsuid32", "setgid", "setgid32", "setgroups", "setgroups32", "setitimer", "setpgid",
	"setpriority", "setregid", "setregid32", "setresgid", "setresgid32", "setresuid",
	"setresuid32", "setreuid", "setreuid32", "setrlimit", "set_robust_list", "setsid",
	"setsockopt", "set_thread_area", "set_tid_address", "setuid", "setuid32", "setxattr",
	"shmat", "shmctl", "shmdt", "shmget", "shutdown", "sigaltstack", "signalfd", "signalfd4",
	"sigprocmask", "sigreturn", "socket", "socketcall", "socketpair", "splice", "stat", "stat64",
	"statfs", "statfs64", "statx", "symlink", "symlinkat", "sync", "sync_file_range", "syncfs",
	"sysinfo", "tee", "tgkill", "time", "timer_create", "timer_delete", "timer_getoverrun",
	"timer_gettime", "timer_gettime64", "timer_settime", "timer_settime64", "timerfd_create",
	"timerfd_gettime", "timerfd_gettime64", "timerfd_settime", "timerfd_settime64", "times",
	"tkill", "truncate", "truncate64", "ugetrlimit", "umask", "uname", "unlink", "unlinkat",
	"utime", "utimensat", "utimensat_time64", "utimes", "vfork", "vmsplice", "wait4", "waitid",
	"waitpid", "write", "writev", "arch_prctl", "modify_ldt", "chroot", "personality",
	"process_vm_readv", "process_vm_writev", "ptrace", "io_uring_setup", "io_uring_enter",
	"io_uring_register",
}

// syscallsByCap are allowed only when the app holds the capability.
var syscallsByCap = map[string][]string{
	"CAP_SYS_ADMIN": {"bpf", "clone", "clone3", "fanotify_init", "fsconfig", "fsmount", "fsopen",
		"fspick", "lookup_dcookie", "mount", "mount_setattr", "move_mount", "open_tree",
		"perf_event_open", "quotactl", "quotactl_fd", "setdomainname", "sethostname", "setns",
		"syslog", "umount", "umount2", "unshare"},
	"CAP_SYS_BOOT":        {"reboot"},
	"CAP_SYS_MODULE":      {"delete_module", "init_module", "finit_module"},
	"CAP_SYS_PACCT":       {"acct"},
	"CAP_SYS_PTRACE":      {"kcmp", "pidfd_getfd"},
	"CAP_SYS_RAWIO":       {"iopl", "ioperm"},
	"CAP_SYS_TIME":        {"settimeofday", "stime", "clock_settime", "clock_settime64"},
	"CAP_SYS_NICE":        {"get_mempolicy", "mbind", "set_mempolicy", "set_mempolicy_home_node"},
	"CAP_SYSLOG":          {"syslog"},
	"CAP_BPF":             {"bpf"},
	"CAP_PERFMON":         {"perf_event_open"},
	"CAP_DAC_READ_SEARCH": {"open_by_handle_at"},
}

// cloneNamespaceFlags are the clone flags that create namespaces.
const cloneNamespaceFlags = 0x7E020000

// DefaultSeccomp returns the default profile for an app holding caps: deny
// (EPERM) by default, allow the common system interface, and the
// privileged calls whose capability the app holds.
func DefaultSeccomp(caps []string) *specs.LinuxSeccomp {
	eperm := uint(1)
	enosys := uint(38)
	sc := &specs.LinuxSeccomp{
		DefaultAction:   specs.ActErrno,
		DefaultErrnoRet: &eperm,
		Architectures:   kernelArchs(seccompArchs(runtime.GOARCH)),
		Syscalls:        []specs.LinuxSyscall{{Names: append([]string{}, defaultSyscalls...), Action: specs.ActAllow}},
	}
	has := map[string]bool{}
	for _, c := range caps {
		has[c] = true
	}
	var extra []string
	for c, calls := range syscallsByCap {
		if has[c] {
			extra = append(extra, calls...)
		}
	}
	if len(extra) > 0 {
		sc.Syscalls = append(sc.Syscalls, specs.LinuxSyscall{Names: dedup(extra), Action: specs.ActAllow})
	}
	if !has["CAP_SYS_ADMIN"] {
		// clone without namespace flags; clone3 cannot be filtered on its
		// flags: ENOSYS makes libc fall back to clone.
		sc.Syscalls = append(sc.Syscalls,
			specs.LinuxSyscall{Names: []string{"clone"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{
				{Index: 0, Value: cloneNamespaceFlags, ValueTwo: 0, Op: specs.OpMaskedEqual},
			}},
			specs.LinuxSyscall{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys},
		)
	}
	return sc
}

// seccompArchs returns the architectures whose system calls a process on
// goarch can make (the native one and its compat modes), like Docker's
// archMap. Every foreign architecture listed makes the filter bigger and
// its compilation, done at every app start and exec, slower.
func seccompArchs(goarch string) []specs.Arch {
	switch goarch {
	case "amd64":
		return []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32}
	case "arm64":
		return []specs.Arch{specs.ArchAARCH64, specs.ArchARM}
	case "386":
		return []specs.Arch{specs.ArchX86}
	case "arm":
		return []specs.Arch{specs.ArchARM}
	}
	return nil // the native architecture only
}

func dedup(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
