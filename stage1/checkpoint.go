package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/opencontainers/runc/libcontainer"

	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/pkg/tarx/upper"
	"github.com/rkt/rkt/stage1/control"
)

// checkpoint dumps running apps with CRIU for a pod checkpoint: it pauses
// every app (cgroup freezer) before dumping any, dumps each leaving it
// running, archives its overlay upper directory while it is paused, and
// resumes them all before it returns, whatever happened. On error it removes
// what it wrote.
func (sv *supervisor) checkpoint(cs *control.CheckpointSpec) (retErr error) {
	if cs == nil || len(cs.Apps) == 0 {
		return errInvalid("checkpoint of no apps")
	}
	if !filepath.IsAbs(cs.Dir) || !filepath.IsAbs(cs.Criu) {
		return errInvalid("checkpoint directory %q and criu %q must be absolute", cs.Dir, cs.Criu)
	}
	names := slices.Clone(cs.Apps)
	slices.Sort(names)
	if len(slices.Compact(slices.Clone(names))) != len(names) {
		return errInvalid("checkpoint names an app twice")
	}
	if err := sv.useCriu(cs.Criu); err != nil {
		return err
	}
	if cs.Deadline.IsZero() {
		cs.Deadline = time.Now().Add(defaultDumpTimeout)
	}
	apps := make([]*app, 0, len(names))
	for _, n := range names {
		a, err := sv.lookup(n)
		if err != nil {
			return err
		}
		apps = append(apps, a)
	}
	// Sorted lock order; held throughout so that no app starts, stops or
	// changes under the dump.
	for _, a := range apps {
		a.mu.Lock()
		defer a.mu.Unlock()
	}
	ctrs := make([]*libcontainer.Container, len(apps))
	for i, a := range apps {
		if !a.running() {
			return errNotRunning(a.name)
		}
		c, err := a.ctr()
		if err != nil {
			return err
		}
		ctrs[i] = c
	}
	var written []string
	defer func() {
		if retErr != nil {
			for _, d := range written {
				if err := os.RemoveAll(d); err != nil {
					slog.Warn("cannot remove a partial checkpoint", "dir", d, "error", err)
				}
			}
		}
	}()
	var paused []int
	defer func() {
		for _, i := range paused {
			if err := ctrs[i].Resume(); err != nil && !errors.Is(err, libcontainer.ErrNotPaused) {
				slog.Warn("cannot resume an app after its checkpoint", "app", apps[i].name, "error", err)
				if retErr == nil {
					retErr = fmt.Errorf("cannot resume app %q: %w", apps[i].name, err)
				}
			}
		}
	}()
	t0 := time.Now()
	for i, c := range ctrs {
		if err := c.Pause(); err != nil {
			return fmt.Errorf("cannot pause app %q: %w", apps[i].name, err)
		}
		paused = append(paused, i)
	}
	for i, c := range ctrs {
		if !cs.Deadline.IsZero() && time.Now().After(cs.Deadline) {
			return fmt.Errorf("checkpoint deadline passed before app %q was dumped (%w)", apps[i].name, syscall.ETIMEDOUT)
		}
		dir := filepath.Join(cs.Dir, apps[i].name)
		if err := fileperm.Mkdir(dir, fileperm.Private); err != nil {
			return fmt.Errorf("cannot create %q: %w", dir, err)
		}
		written = append(written, dir)
		if err := apps[i].dump(c, dir, cs.Deadline); err != nil {
			return err
		}
	}
	slog.Debug("apps checkpointed", "apps", names, "paused for", time.Since(t0))
	return nil
}

// dump writes the app's upper directory to <dir>/rootfs.tar and its CRIU
// images to <dir>/criu, and leaves its container paused; a.mu must be
// held. The layer is archived first, while the app is paused as the
// checkpoint found it: should criu thaw what it dumps (the check below), a
// layer read after the dump would hold what the app wrote since.
// A criu still running lateCriuGrace past deadline is killed.
func (a *app) dump(c *libcontainer.Container, dir string, deadline time.Time) error {
	p := filepath.Join(dir, "rootfs.tar")
	f, err := fileperm.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileperm.Private)
	if err != nil {
		return fmt.Errorf("cannot create %q: %w", p, err)
	}
	err = upper.Archive(f, a.dir().Upper())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cannot archive the writable layer of app %q: %w", a.name, err)
	}
	images := filepath.Join(dir, "criu")
	killed, err := a.sv.spawner.doWatched(deadline, lateCriuGrace, func() error {
		return c.Checkpoint(&libcontainer.CriuOpts{ImagesDirectory: images, LeaveRunning: true})
	})
	if len(killed) > 0 {
		slog.Warn("killed a criu dump running past its deadline", "app", a.name, "pids", killed, "grace", lateCriuGrace)
		return fmt.Errorf("criu (pid %v) was killed %v past the checkpoint's deadline, dumping app %q (%w)", killed, lateCriuGrace, a.name, syscall.ETIMEDOUT)
	}
	if err != nil {
		return fmt.Errorf("cannot dump app %q with criu: %w%s", a.name, err, criuErrors(filepath.Join(images, "dump.log")))
	}
	// Should criu have thawed it, freeze it again: the pod-wide cut holds
	// until every app is dumped.
	if st, err := c.Status(); err == nil && st != libcontainer.Paused {
		slog.Debug("criu left the app running: paused again", "app", a.name)
		if err := c.Pause(); err != nil {
			return fmt.Errorf("cannot pause app %q again: %w", a.name, err)
		}
	}
	if err := fileperm.Apply(images, fileperm.Private); err != nil {
		return err
	}
	ents, err := os.ReadDir(images)
	if err != nil {
		return fmt.Errorf("cannot read %q: %w", images, err)
	}
	for _, e := range ents {
		if err := fileperm.Apply(filepath.Join(images, e.Name()), fileperm.Private); err != nil {
			return err
		}
	}
	return nil
}

// criuErrors returns the last error lines of a criu log, for a message
// (a failed checkpoint's log is removed with it).
func criuErrors(log string) string {
	b, err := os.ReadFile(log)
	if err != nil {
		return ""
	}
	var errs []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "Error") && !strings.Contains(l, "RLIMIT_NOFILE") { // no CAP_SYS_RESOURCE: harmless
			errs = append(errs, strings.TrimSpace(l))
		}
	}
	if len(errs) > 3 {
		errs = errs[len(errs)-3:]
	}
	if len(errs) == 0 {
		return ""
	}
	return " (criu: " + strings.Join(errs, "; ") + ")"
}

// useCriu makes libcontainer, which runs "criu" from PATH, run the given
// binary: a link to it named criu in PodDir.CriuBin, first in PATH. With
// criu empty, the link must exist (stage0 made it for a restore).
func (sv *supervisor) useCriu(criu string) error {
	dir := schema.PodDir(sv.podDir).CriuBin()
	link := filepath.Join(dir, "criu")
	if criu == "" {
		if _, err := os.Stat(link); err != nil {
			return fmt.Errorf("no criu to restore with: %w", err)
		}
	} else if cur, err := os.Readlink(link); err != nil || cur != criu {
		if err := fileperm.MkdirAll(dir, fileperm.Private); err != nil {
			return fmt.Errorf("cannot create %q: %w", dir, err)
		}
		tmp := link + ".tmp"
		os.Remove(tmp)
		if err := os.Symlink(criu, tmp); err != nil {
			return fmt.Errorf("cannot link %q: %w", tmp, err)
		}
		if err := os.Rename(tmp, link); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("cannot link %q: %w", link, err)
		}
	}
	path := os.Getenv("PATH")
	if !strings.HasPrefix(path, dir+":") {
		if err := os.Setenv("PATH", dir+":"+path); err != nil {
			return fmt.Errorf("cannot set PATH: %w", err)
		}
	}
	return nil
}
