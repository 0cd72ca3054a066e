package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

// gcPod is `stage1 gc`: clean what a dead supervisor left of its pod.
func gcPod(podDir string) error {
	if _, err := control.Dial(podDir); err == nil {
		return fmt.Errorf("the supervisor of pod %q is still running", podDir)
	}
	m, err := readManifest(podDir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		m = nil
	}
	var errs []error
	if m != nil {
		if err := cleanupPod(podDir, m); err != nil {
			errs = append(errs, err)
		}
	} else if err := destroyContainers(podDir); err != nil {
		errs = append(errs, err)
	}
	diedAt, _ := control.NoteSupervisorDeath(podDir)
	if _, err := control.MarkSupervisorDead(podDir, diedAt); err != nil {
		errs = append(errs, err)
	}
	os.Remove(schema.PodDir(podDir).Stage1Socket())
	return errors.Join(errs...)
}

// cleanupPod kills the pod's processes, destroys its containers, removes
// its cgroups and the runc state directory.
func cleanupPod(podDir string, m *schema.PodManifest) error {
	var errs []error
	paths := map[string]bool{}
	if !systemdRunning() {
		paths[podCgroupPath(m)] = true
	}
	// Apps whose cgroup is not under the pod cgroup (a custom
	// cgroupsPath) are handled on their own.
	for _, a := range m.Apps {
		spec, err := loadAppSpec(podDir, a.Name)
		if err != nil || spec.Linux.CgroupsPath == "" || !filepath.IsAbs(spec.Linux.CgroupsPath) {
			continue
		}
		if filepath.Dir(spec.Linux.CgroupsPath) != podCgroupPath(m) {
			paths[spec.Linux.CgroupsPath] = true
		}
	}
	mgrs := map[string]cgroups.Manager{}
	for p := range paths {
		mgr, err := podCgroupManager(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		mgrs[p] = mgr
		if err := killCgroup(mgr, 5*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if err := destroyContainers(podDir); err != nil {
		errs = append(errs, err)
	}
	for p, mgr := range mgrs {
		if err := mgr.Destroy(); err != nil {
			errs = append(errs, fmt.Errorf("cannot remove cgroup %q: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// destroyContainers destroys every libcontainer container under <pod>/runc
// and removes that directory.
func destroyContainers(podDir string) error {
	root := filepath.Join(podDir, "runc")
	ents, err := os.ReadDir(root)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("cannot list containers in %q: %w", root, err)
	}
	var errs []error
	for _, e := range ents {
		ctr, err := libcontainer.Load(root, e.Name())
		if err != nil {
			slog.Debug("cannot load a container", "container", e.Name(), "error", err)
			continue
		}
		ctr.Signal(sigKILL)
		waitStopped(ctr, 5*time.Second)
		if err := ctr.Destroy(); err != nil {
			errs = append(errs, fmt.Errorf("container %q: %w", e.Name(), err))
		}
	}
	if err := os.RemoveAll(root); err != nil {
		errs = append(errs, fmt.Errorf("cannot remove %q: %w", root, err))
	}
	return errors.Join(errs...)
}

// waitStopped waits until the container's init is gone (a SIGKILL is
// asynchronous; Destroy refuses a running container).
func waitStopped(ctr *libcontainer.Container, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		st, err := ctr.Status()
		if err != nil || st == libcontainer.Stopped {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
