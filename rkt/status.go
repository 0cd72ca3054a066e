package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/stage0"
)

func init() {
	addCommand("status", func() *cobra.Command {
		var rf runtimeFlags
		var format, wait string
		cmd := podCommand(&cobra.Command{
			Use:               "status UUID",
			Short:             "Show the status of a pod",
			ValidArgsFunction: completePods(),
			Args:              cobra.ExactArgs(1),
			RunE: onePod(&rf, func(ctx context.Context, cmd *cobra.Command, rt *stage0.Runtime, uuid string, _ []string) error {
				if err := checkFormat(format); err != nil {
					return err
				}
				var ps *stage0.PodStatus
				var err error
				if wait != "" {
					if wait != "forever" {
						d, err := time.ParseDuration(wait)
						if err != nil {
							return fmt.Errorf("invalid --wait %q: %w", wait, err)
						}
						var c context.CancelFunc
						ctx, c = context.WithTimeout(ctx, d)
						defer c()
					}
					ps, err = rt.Wait(ctx, uuid)
				} else {
					ps, err = rt.Status(ctx, uuid)
				}
				if err != nil {
					return err
				}
				return printStatus(cmd.OutOrStdout(), ps, format)
			}),
		}, &rf)
		cmd.Flags().StringVar(&format, "format", "", "output format: json or json-pretty")
		cmd.Flags().StringVar(&wait, "wait", "", "wait for the pod to exit (optionally at most this long, e.g. --wait=30s)")
		cmd.Flags().Lookup("wait").NoOptDefVal = "forever"
		return cmd
	})
}

// printStatus prints key=value lines like rkt did, or JSON.
func printStatus(w io.Writer, ps *stage0.PodStatus, format string) error {
	if format != "" {
		return writeJSON(w, format, toJSON(ps))
	}
	fmt.Fprintf(w, "state=%s\n", ps.State)
	if !ps.CreatedAt.IsZero() {
		fmt.Fprintf(w, "created=%s\n", ps.CreatedAt.Local().Format(time.RFC3339Nano))
	}
	if !ps.StartedAt.IsZero() {
		fmt.Fprintf(w, "started=%s\n", ps.StartedAt.Local().Format(time.RFC3339Nano))
	}
	if nets := networksString(ps.Networks); nets != "" {
		fmt.Fprintf(w, "networks=%s\n", nets)
	}
	if ps.Stage1PID > 0 {
		fmt.Fprintf(w, "pid=%d\n", ps.Stage1PID)
	}
	exited := ps.State != stage0.PodRunning && ps.State != stage0.PodPrepared && ps.State != stage0.PodPreparing && ps.State != stage0.PodEmbryo
	fmt.Fprintf(w, "exited=%t\n", exited)
	for _, a := range ps.Apps {
		fmt.Fprintf(w, "app-%s=%s", a.App.Name, a.State)
		if a.State == "exited" {
			fmt.Fprintf(w, " exit-code=%d", a.ExitCode)
			if a.Signal != "" {
				fmt.Fprintf(w, " signal=%s", a.Signal)
			}
			if a.Reason != "" {
				fmt.Fprintf(w, " reason=%s", a.Reason)
			}
		}
		fmt.Fprintln(w)
	}
	return nil
}
