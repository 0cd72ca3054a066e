package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/pkg/buildinfo"
)

func init() {
	addCommand("version", func() *cobra.Command {
		return &cobra.Command{
			Use:   "version",
			Short: "Print the version and exit",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				fmt.Fprintf(cmd.OutOrStdout(), "rkt Version: %s\nGo Version: %s\nGo OS/Arch: %s/%s\n",
					buildinfo.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
				return nil
			},
		}
	})
}
