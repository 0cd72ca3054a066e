package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/stage0"
)

func init() {
	addCommand("logs", func() *cobra.Command {
		var rf runtimeFlags
		var follow bool
		var apps []string
		cmd := podCommand(&cobra.Command{
			Use:               "logs UUID",
			Short:             "Print the output of a pod's apps",
			ValidArgsFunction: completePods(),
			Args:              cobra.ExactArgs(1),
			RunE: onePod(&rf, func(ctx context.Context, cmd *cobra.Command, rt *stage0.Runtime, uuid string, _ []string) error {
				return showLogs(ctx, rt, uuid, apps, follow, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}),
		}, &rf)
		cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new output until the pod exits")
		cmd.Flags().StringSliceVar(&apps, "app", nil, "only these apps")
		return cmd
	})
}

// showLogs prints the logs of a pod's apps (all when apps is empty); with
// follow it keeps going until the pod is no longer running.
func showLogs(ctx context.Context, rt *stage0.Runtime, uuid string, apps []string, follow bool, stdout, stderr io.Writer) error {
	ps, err := rt.Status(ctx, uuid)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, a := range apps {
		want[a] = true
	}
	var lfs []*logFollower
	for _, a := range ps.Apps {
		if len(want) > 0 && !want[a.Name] && !want[a.App.Name] {
			continue
		}
		delete(want, a.App.Name)
		lfs = append(lfs, &logFollower{path: a.LogPath})
	}
	for a := range want {
		return fmt.Errorf("pod %s has no app %q", ps.UUID, a)
	}
	if len(lfs) > 1 {
		for i, a := range filterApps(ps.Apps, apps) {
			lfs[i].prefix = a + ": "
		}
	}
	done := make(chan struct{})
	if follow {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			rt.Wait(wctx, ps.UUID)
			close(done)
		}()
	}
	return followLogs(ctx, lfs, stdout, stderr, follow, done)
}

func filterApps(all []stage0.AppStatus, want []string) []string {
	var out []string
	for _, a := range all {
		if len(want) == 0 {
			out = append(out, a.App.Name)
			continue
		}
		for _, w := range want {
			if w == a.App.Name {
				out = append(out, a.App.Name)
				break
			}
		}
	}
	return out
}
