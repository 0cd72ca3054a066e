package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/stage0"
)

func init() {
	addCommand("cat-manifest", func() *cobra.Command {
		var rf runtimeFlags
		var pretty bool
		cmd := podCommand(&cobra.Command{
			Use:               "cat-manifest UUID",
			Short:             "Print a pod's manifest",
			ValidArgsFunction: completePods(),
			Args:              cobra.ExactArgs(1),
			RunE: onePod(&rf, func(_ context.Context, cmd *cobra.Command, rt *stage0.Runtime, uuid string, _ []string) error {
				pm, err := rt.Manifest(uuid)
				if err != nil {
					return err
				}
				var b []byte
				if pretty {
					b, err = json.MarshalIndent(pm, "", "  ")
				} else {
					b, err = json.Marshal(pm)
				}
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return nil
			}),
		}, &rf)
		cmd.Flags().BoolVar(&pretty, "pretty-print", true, "indent the JSON")
		return cmd
	})
}
