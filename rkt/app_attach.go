package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/stage0"
)

// appAttachCmd is `rkt app attach`: this terminal (or stdio) on a running
// app's stdin/stdout/stderr, the CLI twin of CRI Attach.
func appAttachCmd() *cobra.Command {
	var rf runtimeFlags
	var app string
	var noStdin bool
	cmd := podCommand(&cobra.Command{
		Use:   "attach UUID --app=NAME",
		Short: "Attach to the stdio of a running app (created with --stdin or --tty)",
		Args:  cobra.ExactArgs(1),
		RunE: onePod(&rf, func(ctx context.Context, _ *cobra.Command, rt *stage0.Runtime, uuid string, _ []string) error {
			ps, err := rt.Status(ctx, uuid)
			if err != nil {
				return err
			}
			tty := false
			for _, a := range ps.Apps {
				if a.App.Name == app || (app == "" && len(ps.Apps) == 1) {
					tty = a.App.TTY
				}
			}
			if tty && !noStdin {
				return attachTerminal(ctx, rt, ps.UUID, app)
			}
			opts := stage0.AttachOptions{App: app, TTY: tty, Stdout: os.Stdout, Stderr: os.Stderr}
			if !noStdin {
				opts.Stdin = os.Stdin
			}
			err = rt.Attach(ctx, ps.UUID, opts)
			if ctx.Err() != nil {
				return nil // detached by the user
			}
			return err
		}),
	}, &rf)
	cmd.Flags().StringVar(&app, "app", "", "the app (needed when the pod has several)")
	cmd.Flags().BoolVar(&noStdin, "no-stdin", false, "do not forward this process's stdin")
	return cmd
}
