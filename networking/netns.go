package networking

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/containernetworking/plugins/pkg/ns"
	"golang.org/x/sys/unix"
)

// InNetNS runs fn inside the network namespace at netnsPath, on an OS
// thread of its own; the caller's thread stays where it was. The thread
// goes back to Go's pool only once it is back in this process's namespace
// (one that cannot return stays locked, and Go never reuses it): no thread
// is left locked, nor in the other namespace.
// Sockets fn opens live in that namespace; /proc/thread-self/net is its.
func InNetNS(netnsPath string, fn func() error) error {
	return ns.WithNetNSPath(netnsPath, func(ns.NetNS) error { return fn() })
}

// createNetNS creates a new network namespace with loopback up and
// bind-mounts it at path (which must not exist).
func createNetNS(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("cannot create netns mountpoint %q: %w", path, err)
	}
	f.Close()

	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- newNetNSOnThread(path)
	}()
	if err := <-errc; err != nil {
		_ = os.Remove(path)
		return err
	}
	return nil
}

// newNetNSOnThread unshares the calling (locked) thread into a new network
// namespace, brings loopback up, bind-mounts the namespace at path and
// returns the thread to its original namespace. Only then is the thread
// unlocked: if it cannot go back it stays locked and Go ends it with its
// goroutine (a thread that must not be reused). Merely exiting a locked
// goroutine is not enough: on the main thread Go parks the thread forever,
// which would keep the namespace (and its veths) alive.
func newNetNSOnThread(path string) (err error) {
	orig, err := os.Open(fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid()))
	if err != nil {
		return fmt.Errorf("cannot open current network namespace: %w", err)
	}
	defer orig.Close()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("cannot create network namespace: %w", err)
	}
	defer func() {
		if serr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); serr != nil {
			err = errors.Join(err, fmt.Errorf("cannot return to the original network namespace: %w", serr))
			return
		}
		runtime.UnlockOSThread()
	}()
	if err := loopbackUp(); err != nil {
		return err
	}
	src := fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
	if err := unix.Mount(src, path, "none", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("cannot bind-mount network namespace at %q: %w", path, err)
	}
	return nil
}

// loopbackUp sets "lo" up in the current thread's network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot open socket to set lo up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("cannot read flags of lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("cannot set lo up: %w", err)
	}
	return nil
}

// removeNetNS unmounts and removes the namespace bind mount at path. A
// missing or unmounted path is not an error.
func removeNetNS(path string) error {
	for {
		err := unix.Unmount(path, unix.MNT_DETACH)
		if err == nil {
			continue // stacked mounts: unmount until none is left
		}
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			break
		}
		return fmt.Errorf("cannot unmount network namespace %q: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cannot remove network namespace mountpoint %q: %w", path, err)
	}
	return nil
}

// isNetNS reports whether path is a mounted network namespace.
func isNetNS(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}
