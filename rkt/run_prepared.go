package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/stage0"
)

func init() {
	addCommand("run-prepared", func() *cobra.Command {
		var rf runtimeFlags
		var detach, interactive bool
		cmd := podCommand(&cobra.Command{
			Use:               "run-prepared UUID",
			Short:             "Run a prepared pod",
			ValidArgsFunction: completePods(stage0.PodPrepared),
			Args:              cobra.ExactArgs(1),
			RunE: onePod(&rf, func(ctx context.Context, cmd *cobra.Command, rt *stage0.Runtime, uuid string, _ []string) error {
				if interactive {
					if err := checkInteractive(ctx, rt, uuid); err != nil {
						return err
					}
				}
				if err := rt.RunPrepared(ctx, uuid); err != nil {
					return fmt.Errorf("cannot run pod %s: %w", uuid, err)
				}
				if detach {
					fmt.Fprintln(cmd.OutOrStdout(), uuid)
					return nil
				}
				return foreground(ctx, rt, uuid, interactive, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}),
		}, &rf)
		cmd.Flags().BoolVar(&detach, "detach", false, "start the pod and return")
		cmd.Flags().BoolVar(&interactive, "interactive", false, "attach this terminal to the pod's (single, tty) app")
		return cmd
	})
}

// checkInteractive refuses --interactive for a prepared pod that has not
// exactly one app with a terminal and stdin (rkt prepare --interactive):
// there would be nothing to attach to once the pod runs.
func checkInteractive(ctx context.Context, rt *stage0.Runtime, uuid string) error {
	ps, err := rt.Status(ctx, uuid)
	if err != nil {
		return err
	}
	if len(ps.Apps) != 1 || !ps.Apps[0].App.TTY || !ps.Apps[0].App.Stdin {
		return fmt.Errorf("cannot run pod %s --interactive: it was not prepared with --interactive (one app, with a terminal)", uuid)
	}
	return nil
}
