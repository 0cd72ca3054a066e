package stage0

import (
	"context"
	"errors"
	"fmt"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/chanmap"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

// This file holds the calls on running apps that go through the pod's
// supervisor: exec, attach, resources, stats and logs.

func (r *Runtime) exec(ctx context.Context, uuid string, o ExecOptions) (int, error) {
	p, c, err := r.client(uuid)
	if err != nil {
		return -1, err
	}
	app, err := findApp(p, o.App)
	if err != nil {
		return -1, err
	}
	code, err := c.Exec(ctx, control.ExecRequest{
		App: app, Args: o.Args, Env: o.Env, Cwd: o.Cwd, User: o.User, TTY: o.TTY,
		Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Resize: convertResize(ctx, o.Resize),
	})
	return code, appErr(err)
}

func (r *Runtime) attach(ctx context.Context, uuid string, o AttachOptions) error {
	p, c, err := r.client(uuid)
	if err != nil {
		return err
	}
	app, err := findApp(p, o.App)
	if err != nil {
		return err
	}
	return appErr(c.Attach(ctx, control.AttachRequest{
		App: app, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, TTY: o.TTY,
		Resize: convertResize(ctx, o.Resize),
	}))
}

// convertResize forwards TermSize values to the control client's type.
func convertResize(ctx context.Context, in <-chan TermSize) <-chan control.TermSize {
	return chanmap.Map(ctx, in, func(sz TermSize) control.TermSize {
		return control.TermSize{Width: sz.Width, Height: sz.Height}
	})
}

func (r *Runtime) updateAppResources(ctx context.Context, uuid, app string, res *specs.LinuxResources) error {
	p, c, err := r.client(uuid)
	if err != nil {
		return err
	}
	if app, err = findApp(p, app); err != nil {
		return err
	}
	return appErr(c.UpdateResources(ctx, app, r.withoutMissingHugetlb(res)))
}

func (r *Runtime) appStats(ctx context.Context, uuid, app string) (*AppStats, error) {
	p, c, err := r.client(uuid)
	if err != nil {
		return nil, err
	}
	if app, err = findApp(p, app); err != nil {
		return nil, err
	}
	s, err := c.Stats(ctx, app)
	if err != nil {
		return nil, appErr(err)
	}
	return &AppStats{
		Timestamp: s.Timestamp, CPUUsageNanos: s.CPUUsageNanos, MemoryUsage: s.MemoryUsage,
		MemoryWorkingSet: s.MemoryWorkingSet, MemoryLimit: s.MemoryLimit, Pids: s.Pids,
	}, nil
}

func (r *Runtime) podStats(ctx context.Context, uuid string) (*AppStats, error) {
	p, c, err := r.client(uuid)
	if err != nil {
		return nil, err
	}
	pm, err := p.readManifest()
	if err != nil {
		return nil, err
	}
	if !systemdRunning() {
		return podCgroupStats(pm)
	}
	// systemd scopes have no common pod cgroup here: sum the apps
	sts, err := c.Status(ctx)
	if err != nil {
		return nil, appErr(err)
	}
	total := &AppStats{Timestamp: time.Now()}
	for _, st := range sts {
		if st.State != schema.AppRunning {
			continue
		}
		s, err := c.Stats(ctx, st.Name)
		if err != nil {
			if errors.Is(err, control.ErrAppNotRunning) {
				continue
			}
			return nil, fmt.Errorf("pod %s: %w", p.uuid, appErr(err))
		}
		total.CPUUsageNanos += s.CPUUsageNanos
		total.MemoryUsage += s.MemoryUsage
		total.MemoryWorkingSet += s.MemoryWorkingSet
		total.Pids += s.Pids
	}
	return total, nil
}

func (r *Runtime) reopenAppLog(ctx context.Context, uuid, app string) error {
	p, c, err := r.client(uuid)
	if err != nil {
		return err
	}
	if app, err = findApp(p, app); err != nil {
		return err
	}
	return appErr(c.ReopenLog(ctx, app))
}
