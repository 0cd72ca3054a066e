package main

import (
	"github.com/spf13/cobra"
)

// imageSubcommands build the subcommands of `rkt image`; each adds itself
// in its file's init().
var imageSubcommands []func() *cobra.Command

// addImageCommand adds a subcommand of `rkt image`.
func addImageCommand(build func() *cobra.Command) {
	imageSubcommands = append(imageSubcommands, build)
}

func init() {
	addCommand("image", func() *cobra.Command {
		cmd := &cobra.Command{
			Use:   "image",
			Short: "Operate on images in the store: list, rm, gc, cat-manifest, export, render",
		}
		for _, build := range imageSubcommands {
			cmd.AddCommand(build())
		}
		return cmd
	})
}
