package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/opencontainers/runc/libcontainer"
)

// restore creates the app's container and restores into it the process
// dumped in the CRIU images (a pod checkpoint's, copied there by stage0's
// RestorePod), with new stdout/stderr pipes in place of the dumped ones.
// The images are removed once the process runs. In a pod's shared PID
// namespace the namespace first moves past every PID the pod's pending
// restores need. A criu still running lateCriuGrace past the deadline
// (defaultRestoreTimeout from now if zero) is killed, with whatever it
// restored, and the restore fails with ETIMEDOUT.
func (a *app) restore(images string, deadline time.Time) (*prestarted, error) {
	if err := a.sv.useCriu(""); err != nil {
		return nil, err
	}
	if h := a.sv.pidns; h != nil {
		// the apps restored first must not fork into PIDs of the others
		last, err := maxPendingRestorePID(a.sv.podDir)
		if err != nil {
			return nil, fmt.Errorf("cannot restore app %q: %w", a.name, err)
		}
		if err := h.raiseLastPID(a.sv.spawner, last); err != nil {
			return nil, fmt.Errorf("cannot restore app %q: %w", a.name, err)
		}
	}
	if deadline.IsZero() {
		deadline = time.Now().Add(defaultRestoreTimeout)
	}
	work := filepath.Join(string(a.dir()), "restore-work")
	pre, err := a.newContainer(func(ctr *libcontainer.Container, p *libcontainer.Process) error {
		killed, err := a.sv.spawner.doWatched(deadline, lateCriuGrace, func() error {
			return ctr.Restore(p, &libcontainer.CriuOpts{ImagesDirectory: images, WorkDirectory: work})
		})
		if len(killed) > 0 {
			slog.Warn("killed a criu restore running past its deadline", "app", a.name, "pids", killed, "grace", lateCriuGrace)
			// the tasks it made are in the container's cgroup; the
			// container's destruction (newContainer) does not kill
			// them in a private PID namespace
			if err := killAll(ctr.Processes, 5*time.Second); err != nil {
				slog.Warn("cannot kill what a killed restore left", "app", a.name, "error", err)
			}
			return fmt.Errorf("criu (pid %v) was killed %v past the start's deadline, restoring app %q (%w)", killed, lateCriuGrace, a.name, syscall.ETIMEDOUT)
		}
		if err != nil {
			log := filepath.Join(work, "restore.log")
			return fmt.Errorf("cannot restore app %q with criu (log: %s): %w%s", a.name, log, err, criuErrors(log))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The restoring Container does not know its init's start time (only
	// Load reads it), so it takes the init for gone and refuses to signal
	// it: use the container as loaded from its state.
	c, err := libcontainer.Load(a.sv.runcRoot(), a.name)
	if err != nil {
		pre.p.Signal(sigKILL)
		pre.p.Wait()
		pre.ctr.Destroy()
		pre.aio.abort()
		pre.lw.Close()
		return nil, fmt.Errorf("cannot load the restored container of app %q: %w", a.name, err)
	}
	pre.ctr = c
	if err := os.RemoveAll(images); err != nil {
		slog.Warn("cannot remove the restored images", "app", a.name, "error", err)
	}
	return pre, nil
}

// exists reports whether p exists.
func exists(p string) bool {
	_, err := os.Lstat(p)
	return !errors.Is(err, os.ErrNotExist)
}
