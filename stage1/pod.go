package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/sysctl"
)

// nsRefPid is the process whose namespaces stage1 must not change: stage0,
// its parent at start (PID 1 is often unreadable in containers).
var nsRefPid = 1

// ownNamespace reports whether this process has a namespace of kind (e.g.
// "uts") other than its starter's, so changing it cannot affect the host.
func ownNamespace(kind string) bool {
	var self, ref unix.Stat_t
	if unix.Stat("/proc/self/ns/"+kind, &self) != nil {
		return false
	}
	for _, pid := range []int{nsRefPid, 1} {
		if unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/"+kind, &ref) == nil {
			return self.Ino != ref.Ino || self.Dev != ref.Dev
		}
	}
	return false
}

// setHostname sets the pod's hostname in the supervisor's UTS namespace,
// which the apps join. It refuses to touch the host's.
func setHostname(name string) error {
	if name == "" {
		return nil
	}
	if !ownNamespace("uts") {
		return fmt.Errorf("cannot set hostname %q: stage1 was not started in its own UTS namespace", name)
	}
	if err := unix.Sethostname([]byte(name)); err != nil {
		return fmt.Errorf("cannot set hostname %q: %w", name, err)
	}
	return nil
}

// applySysctls sets the pod's namespaced sysctls: ipc and uts ones in the
// supervisor's own namespaces, net ones inside the pod's netns.
func applySysctls(sysctls map[string]string, netns string) error {
	keys := make([]string, 0, len(sysctls))
	for k := range sysctls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var netKeys []string
	for _, k := range keys {
		kind := sysctl.Namespace(k)
		switch kind {
		case "":
			return fmt.Errorf("sysctl %q is not namespaced and cannot be set for a pod", k)
		case "net":
			if netns == "" {
				return fmt.Errorf("sysctl %q needs a pod network namespace (the pod uses the host's)", k)
			}
			netKeys = append(netKeys, k)
			continue
		}
		if !ownNamespace(kind) {
			return fmt.Errorf("sysctl %q: stage1 does not have its own %s namespace", k, kind)
		}
		if err := os.WriteFile(sysctl.Path(k), []byte(sysctls[k]), 0o644); err != nil {
			return fmt.Errorf("cannot set sysctl %q: %w", k, err)
		}
	}
	if len(netKeys) == 0 {
		return nil
	}
	errc := make(chan error, 1)
	go func() {
		// This thread enters the pod's netns and is never unlocked, so Go
		// terminates it when the goroutine ends.
		runtime.LockOSThread()
		errc <- setNetSysctls(netns, netKeys, sysctls)
	}()
	return <-errc
}

func setNetSysctls(netns string, keys []string, sysctls map[string]string) error {
	fd, err := unix.Open(netns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot open netns %q: %w", netns, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("cannot enter netns %q: %w", netns, err)
	}
	for _, k := range keys {
		if err := os.WriteFile(sysctl.Path(k), []byte(sysctls[k]), 0o644); err != nil {
			return fmt.Errorf("cannot set sysctl %q in the pod netns: %w", k, err)
		}
	}
	return nil
}
