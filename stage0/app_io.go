package stage0

import (
	"context"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/chanmap"
	"github.com/rkt/rkt/stage1/control"
)

// This file holds the calls on running apps that go through the pod's
// supervisor: exec, attach, resources, stats and logs.

func (r *Runtime) exec(ctx context.Context, uuid string, o ExecOptions) (int, error) {
	code := -1
	err := r.onSupervisor(uuid, o.App, func(c *control.Client, app string) error {
		var err error
		code, err = c.Exec(ctx, control.ExecRequest{
			App: app, Args: o.Args, Env: o.Env, Cwd: o.Cwd, User: o.User, TTY: o.TTY,
			Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Resize: convertResize(ctx, o.Resize),
		})
		return err
	})
	return code, err
}

func (r *Runtime) attach(ctx context.Context, uuid string, o AttachOptions) error {
	return r.onSupervisor(uuid, o.App, func(c *control.Client, app string) error {
		return c.Attach(ctx, control.AttachRequest{
			App: app, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, TTY: o.TTY,
			Resize: convertResize(ctx, o.Resize),
		})
	})
}

// convertResize forwards TermSize values to the control client's type.
func convertResize(ctx context.Context, in <-chan TermSize) <-chan control.TermSize {
	return chanmap.Map(ctx, in, func(sz TermSize) control.TermSize {
		return control.TermSize{Width: sz.Width, Height: sz.Height}
	})
}

func (r *Runtime) updateAppResources(ctx context.Context, uuid, app string, res *specs.LinuxResources) error {
	return r.onSupervisor(uuid, app, func(c *control.Client, app string) error {
		return c.UpdateResources(ctx, app, r.withoutMissingHugetlb(res))
	})
}

func (r *Runtime) reopenAppLog(ctx context.Context, uuid, app string) error {
	return r.onSupervisor(uuid, app, func(c *control.Client, app string) error {
		return c.ReopenLog(ctx, app)
	})
}
