package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

func init() {
	var rf runtimeFlags
	var pretty bool
	cmd := podCommand(&cobra.Command{
		Use:               "cat-manifest UUID",
		Short:             "Print a pod's manifest",
		ValidArgsFunction: completePods(),
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, err := newRuntimeNoStore(rf)
			if err != nil {
				return err
			}
			pm, err := rt.Manifest(args[0])
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
		},
	}, &rf)
	cmd.Flags().BoolVar(&pretty, "pretty-print", true, "indent the JSON")
	subcommands = append(subcommands, cmd)
}
