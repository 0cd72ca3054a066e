package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/stage0"
)

// `rkt app` is the per-app lifecycle (the CLI twin of the CRI).
func init() {
	addCommand("app", func() *cobra.Command {
		cmd := &cobra.Command{
			Use:   "app",
			Short: "Manage the apps of a pod started with `rkt app sandbox`",
		}
		cmd.AddCommand(appSandboxCmd(), appAddCmd(), appStartCmd(), appStopCmd(), appRmCmd(),
			appListCmd(), appStatusCmd(), appExecCmd(), appAttachCmd())
		return cmd
	})
}

func appAddCmd() *cobra.Command {
	var rf runtimeFlags
	var af appFlags
	var pullPolicy string
	var logPath string
	cmd := podCommand(&cobra.Command{
		Use:   "add UUID IMAGE [app flags] [-- ARGS...]",
		Short: "Add an app to a running sandbox pod (it does not start)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				if dash < 2 {
					return errors.New("need UUID and IMAGE before --")
				}
				af.args = args[dash:]
				args = args[:dash]
			}
			if len(args) != 2 {
				return fmt.Errorf("want UUID IMAGE, got %d arguments", len(args))
			}
			af.oomSet = cmd.Flags().Changed("oom-score-adj")
			rt, s, err := newRuntime(rf)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			id, err := fetchForRun(ctx, s, args[1], &podFlags{pullPolicy: pullPolicy})
			if err != nil {
				return err
			}
			o, err := af.appOptions(id, nil, nil)
			if err != nil {
				return &exitError{code: 254, err: err}
			}
			o.LogPath = logPath
			if err := fetchImageMounts(ctx, s, &o, &podFlags{pullPolicy: pullPolicy}); err != nil {
				return err
			}
			name, err := rt.AddApp(ctx, args[0], o)
			if err != nil {
				return fmt.Errorf("cannot add app: %w", err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), name)
			return nil
		},
	}, &rf)
	cmd.Flags().AddFlagSet(appFlagSet(&af))
	cmd.Flags().StringVar(&pullPolicy, "pull-policy", "new", "when to fetch the image: never, new, update")
	cmd.Flags().StringVar(&logPath, "log-path", "", "the app's log file (default: in the app's directory)")
	return cmd
}

// appOp builds `rkt app start|stop|rm UUID --app=NAME`.
func appOp(use, short string, op func(ctx context.Context, rt *stage0.Runtime, uuid, app string, timeout time.Duration) error) *cobra.Command {
	var rf runtimeFlags
	var app string
	var timeout time.Duration
	cmd := podCommand(&cobra.Command{
		Use:   use + " UUID --app=NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: onePod(&rf, func(ctx context.Context, _ *cobra.Command, rt *stage0.Runtime, uuid string, _ []string) error {
			if err := op(ctx, rt, uuid, app, timeout); err != nil {
				return fmt.Errorf("cannot %s app %q of pod %s: %w", use, app, uuid, err)
			}
			return nil
		}),
	}, &rf)
	cmd.Flags().StringVar(&app, "app", "", "the app's name")
	cmd.MarkFlagRequired("app")
	if use == "stop" {
		cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "grace period before SIGKILL")
	}
	return cmd
}

func appStartCmd() *cobra.Command {
	return appOp("start", "Start an app of a running pod", func(ctx context.Context, rt *stage0.Runtime, uuid, app string, _ time.Duration) error {
		return rt.StartApp(ctx, uuid, app)
	})
}

func appStopCmd() *cobra.Command {
	return appOp("stop", "Stop an app of a running pod", func(ctx context.Context, rt *stage0.Runtime, uuid, app string, t time.Duration) error {
		return rt.StopApp(ctx, uuid, app, stage0.StopOptions{Timeout: t})
	})
}

func appRmCmd() *cobra.Command {
	return appOp("rm", "Remove an app from a pod (stopping it first)", func(ctx context.Context, rt *stage0.Runtime, uuid, app string, _ time.Duration) error {
		return rt.RemoveApp(ctx, uuid, app)
	})
}

func appListCmd() *cobra.Command {
	var rf runtimeFlags
	var format string
	var noLegend, full bool
	cmd := podCommand(&cobra.Command{
		Use:   "list UUID",
		Short: "List the apps of a pod",
		Args:  cobra.ExactArgs(1),
		RunE: onePod(&rf, func(ctx context.Context, cmd *cobra.Command, rt *stage0.Runtime, uuid string, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			ps, err := rt.Status(ctx, uuid)
			if err != nil {
				return err
			}
			if format != "" {
				out := []appJSON{}
				for _, a := range ps.Apps {
					out = append(out, appToJSON(a))
				}
				return writeJSON(cmd.OutOrStdout(), format, out)
			}
			now := time.Now()
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 8, 2, ' ', 0)
			if !noLegend {
				fmt.Fprintln(tw, "APP\tNAME\tSTATE\tCREATED\tSTARTED\tEXITED\tEXIT CODE\tIMAGE")
			}
			for _, a := range ps.Apps {
				code := "-"
				if a.State == "exited" {
					code = fmt.Sprint(a.ExitCode)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.App.Name, displayName(a.App.Annotations), a.State,
					formatTime(a.CreatedAt, now, full), formatTime(a.StartedAt, now, full),
					formatTime(a.FinishedAt, now, full), code, a.ImageRef)
			}
			return tw.Flush()
		}),
	}, &rf)
	cmd.Flags().StringVar(&format, "format", "", "output format: json or json-pretty")
	cmd.Flags().BoolVar(&noLegend, "no-legend", false, "do not print the table header")
	cmd.Flags().BoolVar(&full, "full", false, "absolute times")
	return cmd
}

func appStatusCmd() *cobra.Command {
	var rf runtimeFlags
	var format, app string
	cmd := podCommand(&cobra.Command{
		Use:   "status UUID --app=NAME",
		Short: "Show the status of an app",
		Args:  cobra.ExactArgs(1),
		RunE: onePod(&rf, func(ctx context.Context, cmd *cobra.Command, rt *stage0.Runtime, uuid string, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			ps, err := rt.Status(ctx, uuid)
			if err != nil {
				return err
			}
			for _, a := range ps.Apps {
				if a.App.Name != app {
					continue
				}
				j := appToJSON(a)
				if format != "" {
					return writeJSON(cmd.OutOrStdout(), format, j)
				}
				w := cmd.OutOrStdout()
				fmt.Fprintf(w, "name=%s\nstate=%s\nimage=%s\nimage-id=%s\n", j.Name, j.State, j.Image, j.ImageID)
				if j.Pid > 0 {
					fmt.Fprintf(w, "pid=%d\n", j.Pid)
				}
				for _, t := range []struct {
					k string
					v *time.Time
				}{{"created", j.CreatedAt}, {"started", j.StartedAt}, {"finished", j.FinishedAt}} {
					if t.v != nil {
						fmt.Fprintf(w, "%s=%s\n", t.k, t.v.Local().Format(time.RFC3339Nano))
					}
				}
				if j.State == "exited" {
					fmt.Fprintf(w, "exit-code=%d\n", j.ExitCode)
					if j.Signal != "" {
						fmt.Fprintf(w, "signal=%s\n", j.Signal)
					}
					fmt.Fprintf(w, "oom-killed=%t\n", j.OOMKilled)
				}
				if j.Reason != "" {
					fmt.Fprintf(w, "reason=%s\n", j.Reason)
				}
				fmt.Fprintf(w, "log=%s\n", j.LogPath)
				return nil
			}
			return fmt.Errorf("pod %s has no app %q: %w", ps.UUID, app, stage0.ErrAppNotFound)
		}),
	}, &rf)
	cmd.Flags().StringVar(&app, "app", "", "the app's name")
	cmd.MarkFlagRequired("app")
	cmd.Flags().StringVar(&format, "format", "", "output format: json or json-pretty")
	return cmd
}

func appExecCmd() *cobra.Command {
	return execCommand(&cobra.Command{
		Use:   "exec UUID --app=NAME [--tty] [--] CMD [ARGS...]",
		Short: "Run a command in a running app",
	}, false, "false")
}
