package main

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	sdutil "github.com/coreos/go-systemd/v22/util"
	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
)

// defaultCgroupParent is used when the pod manifest names no cgroup parent;
// it matches stage0's default.
const defaultCgroupParent = "/rkt"

// systemdRunning reports whether systemd is PID 1 (sd_booted(3), as
// go-systemd checks it); apps then use libcontainer's systemd cgroup driver.
func systemdRunning() bool { return sdutil.IsRunningSystemd() }

// podCgroupPath is the absolute cgroupfs path of the pod: the parent of its
// apps' cgroups.
func podCgroupPath(m *schema.PodManifest) string {
	parent := m.CgroupParent
	if parent == "" {
		parent = defaultCgroupParent
	}
	if !strings.HasPrefix(parent, "/") {
		parent = "/" + parent
	}
	return path.Join(parent, m.UUID)
}

// systemdCgroupsPath converts an absolute cgroupfs path
// <parent>/<pod uuid>/<app> into libcontainer's systemd form
// "slice:prefix:name": the app becomes the scope rkt-<uuid>-<app>.scope in
// the parent's slice (system.slice unless the parent's last element is a
// slice). A path already in that form is returned as is.
func systemdCgroupsPath(p string) string {
	if strings.Count(p, ":") == 2 {
		return p
	}
	p = path.Clean("/" + p)
	app := path.Base(p)
	pod := path.Base(path.Dir(p))
	parent := path.Base(path.Dir(path.Dir(p)))
	slice := "system.slice"
	if strings.HasSuffix(parent, ".slice") {
		slice = parent
	}
	return slice + ":rkt-" + pod + ":" + app
}

// podCgroupManager returns a cgroupfs manager for the pod cgroup (all
// controllers, v1 and the unified hierarchy); it creates nothing.
func podCgroupManager(cgPath string) (cgroups.Manager, error) {
	mgr, err := manager.New(&cgroups.Cgroup{Path: cgPath, Resources: &cgroups.Resources{}})
	if err != nil {
		return nil, fmt.Errorf("cannot get cgroup manager for %q: %w", cgPath, err)
	}
	return mgr, nil
}

// killCgroup SIGKILLs every process in the cgroup tree of mgr until none
// is left or the deadline passes.
func killCgroup(mgr cgroups.Manager, timeout time.Duration) error {
	if err := killAll(func() ([]int, error) { return cgroupPids(mgr) }, timeout); err != nil {
		return fmt.Errorf("cannot empty cgroup %q: %w", mgr.Path(""), err)
	}
	return nil
}

// killAll SIGKILLs every process pids lists (but this one) until none is
// left or the deadline passes.
func killAll(pids func() ([]int, error), timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids, err := pids()
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v outlive SIGKILL", pids)
		}
		for _, pid := range pids {
			if pid != os.Getpid() {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cgroupPids lists the processes in every hierarchy of the manager's paths.
func cgroupPids(mgr cgroups.Manager) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for _, p := range mgr.GetPaths() {
		pids, err := cgroups.GetAllPids(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("cannot list processes of cgroup %q: %w", p, err)
		}
		for _, pid := range pids {
			if !seen[pid] && pid != os.Getpid() {
				seen[pid] = true
				out = append(out, pid)
			}
		}
	}
	return out, nil
}

// removePodCgroups kills what is left in the pod cgroup and removes it with
// its children in every hierarchy.
func removePodCgroups(cgPath string) error {
	mgr, err := podCgroupManager(cgPath)
	if err != nil {
		return err
	}
	if err := killCgroup(mgr, 5*time.Second); err != nil {
		return err
	}
	if err := mgr.Destroy(); err != nil {
		return fmt.Errorf("cannot remove pod cgroup %q: %w", cgPath, err)
	}
	return nil
}

// cgroupExists reports whether the cgroup exists in any hierarchy.
func cgroupExists(cgPath string) bool {
	mgr, err := podCgroupManager(cgPath)
	if err != nil {
		return false
	}
	for _, p := range mgr.GetPaths() {
		if _, err := os.Stat(filepath.Clean(p)); err == nil {
			return true
		}
	}
	return false
}

// warmCgroupAttach starts the wait of the next cgroup migration early.
// Moving a process between cgroups takes the kernel's global
// cgroup_threadgroup_rwsem for writing, and the first writer after a quiet
// spell waits for an RCU grace period (10-20 ms on a busy machine); the
// writers that follow within a grace period do not. Writing the
// supervisor's own pid to the cgroup it is in (a migration that moves
// nothing) while a container is being prepared makes that wait overlap
// the preparation instead of delaying the container init's move into its
// cgroups. Errors are ignored: it only saves time.
func warmCgroupAttach() {
	cgs, err := cgroups.ParseCgroupFile("/proc/self/cgroup")
	if err != nil {
		return
	}
	mnt, sub := "/sys/fs/cgroup", ""
	if !cgroups.IsCgroup2UnifiedMode() {
		if mnt, err = cgroups.FindCgroupMountpoint("", "pids"); err != nil {
			return
		}
		sub = "pids"
	}
	p, ok := cgs[sub]
	if !ok {
		return
	}
	procs := filepath.Join(mnt, p, "cgroup.procs")
	b, err := os.ReadFile(procs)
	pid := strconv.Itoa(os.Getpid())
	if err != nil || !slices.Contains(strings.Fields(string(b)), pid) {
		return // not surely the cgroup it is in (a cgroup namespace): moving it would not be a no-op
	}
	f, err := os.OpenFile(procs, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	f.WriteString(pid)
	f.Close()
}
