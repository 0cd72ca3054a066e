package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/store"
)

// imageListFlags are the options of `rkt image list`.
type imageListFlags struct {
	format   string // "", "json" or "json-pretty"
	noLegend bool   // omit the table header
	full     bool   // full IDs and absolute times
}

func init() {
	addImageCommand(func() *cobra.Command {
		var f imageListFlags
		cmd := &cobra.Command{
			Use:     "list",
			Aliases: []string{"ls"},
			Short:   "List the images in the store",
			Args:    cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				s, err := openStore()
				if err != nil {
					return err
				}
				imgs, err := s.ListImages()
				if err != nil {
					return fmt.Errorf("cannot list images: %w", err)
				}
				legacyNotice(cmd.ErrOrStderr(), false, true)
				return printImages(cmd.OutOrStdout(), imgs, f, time.Now())
			},
		}
		cmd.Flags().StringVar(&f.format, "format", "", "output format: json or json-pretty (default: a table)")
		cmd.Flags().BoolVar(&f.noLegend, "no-legend", false, "do not print the table header")
		cmd.Flags().BoolVar(&f.full, "full", false, "print full image IDs and absolute times")
		return cmd
	})
}

// printImages writes imgs as a table (one row per name) or as JSON.
func printImages(w io.Writer, imgs []*store.Image, f imageListFlags, now time.Time) error {
	switch f.format {
	case "json", "json-pretty":
		if imgs == nil {
			imgs = []*store.Image{}
		}
		enc := json.NewEncoder(w)
		if f.format == "json-pretty" {
			enc.SetIndent("", "  ")
		}
		return enc.Encode(imgs)
	case "":
	default:
		return fmt.Errorf("invalid --format %q: want json or json-pretty", f.format)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	if !f.noLegend {
		fmt.Fprintln(tw, "ID\tNAME\tSIZE\tIMPORT TIME\tLAST USED")
	}
	for _, img := range imgs {
		id := img.ShortID()
		if f.full {
			id = img.ID
		}
		names := img.Names
		if len(names) == 0 {
			names = []string{"<none>"}
		}
		for _, n := range names {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, n, humanBytes(img.Size),
				formatTime(img.ImportedAt, now, f.full), formatTime(img.LastUsedAt, now, f.full))
		}
	}
	return tw.Flush()
}

// formatTime prints t relative to now ("3 minutes ago"), or RFC 3339 when
// full is set.
func formatTime(t, now time.Time, full bool) string {
	if t.IsZero() {
		return "-"
	}
	if full {
		return t.Local().Format(time.RFC3339)
	}
	return humanAgo(now.Sub(t))
}

// humanAgo renders a duration in the past as rkt did ("2 hours ago").
func humanAgo(d time.Duration) string {
	plural := func(n int, unit string) string {
		if n == 1 {
			return "1 " + unit + " ago"
		}
		return fmt.Sprintf("%d %ss ago", n, unit)
	}
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		return plural(int(d.Seconds()), "second")
	case d < time.Hour:
		return plural(int(d.Minutes()), "minute")
	case d < 48*time.Hour:
		return plural(int(d.Hours()), "hour")
	default:
		return plural(int(d.Hours()/24), "day")
	}
}

// joinNames lists an image's names for messages.
func joinNames(img *store.Image) string {
	if len(img.Names) == 0 {
		return img.ID
	}
	return strings.Join(img.Names, ", ")
}
