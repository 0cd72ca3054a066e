package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/stage0"
)

type listFlags struct {
	full     bool
	noLegend bool
	format   string
}

func init() {
	addCommand("list", func() *cobra.Command {
		var rf runtimeFlags
		var f listFlags
		cmd := podCommand(&cobra.Command{
			Use:     "list",
			Aliases: []string{"ls"},
			Short:   "List pods",
			Args:    cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := checkFormat(f.format); err != nil {
					return err
				}
				rt, err := newRuntimeNoStore(rf)
				if err != nil {
					return err
				}
				pods, err := rt.List(cmd.Context())
				if err != nil {
					return fmt.Errorf("cannot list pods: %w", err)
				}
				legacyNotice(cmd.ErrOrStderr(), true, false)
				for uuid, err := range rt.LeftOut() {
					fmt.Fprintf(cmd.ErrOrStderr(), "rkt: pod %s is left out: %v\n", uuid, err)
				}
				return printPods(cmd.OutOrStdout(), pods, f, time.Now())
			},
		}, &rf)
		cmd.Flags().BoolVar(&f.full, "full", false, "full UUIDs and image IDs, absolute times")
		cmd.Flags().BoolVar(&f.noLegend, "no-legend", false, "do not print the table header")
		cmd.Flags().StringVar(&f.format, "format", "", "output format: json or json-pretty (default: a table)")
		return cmd
	})
}

// printPods prints one row per app (a pod without apps gets one row).
func printPods(w io.Writer, pods []*stage0.PodStatus, f listFlags, now time.Time) error {
	if f.format != "" {
		out := make([]podJSON, 0, len(pods))
		for _, p := range pods {
			out = append(out, toJSON(p))
		}
		return writeJSON(w, f.format, out)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	if !f.noLegend {
		fmt.Fprintln(tw, "UUID\tNAME\tAPP\tIMAGE NAME\tSTATE\tCREATED\tSTARTED\tNETWORKS")
	}
	for _, p := range pods {
		uuid := p.UUID
		if !f.full {
			uuid = uuid[:8]
		}
		created := formatTime(p.CreatedAt, now, f.full)
		started := formatTime(p.StartedAt, now, f.full)
		nets := networksString(p.Networks)
		name := podDisplayName(p)
		if len(p.Apps) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t%s\t%s\t%s\t%s\n", uuid, name, p.State, created, started, nets)
			continue
		}
		for _, a := range p.Apps {
			img := a.ImageRef
			if f.full {
				img = a.ImageRef + " (" + a.App.Image.ID + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", uuid, name, a.App.Name, img, p.State, created, started, nets)
		}
	}
	return tw.Flush()
}
