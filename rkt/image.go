package main

import (
	"github.com/spf13/cobra"
)

// imageCmd is `rkt image`; its subcommands add themselves in their init().
var imageCmd = &cobra.Command{
	Use:   "image",
	Short: "Operate on images in the store: list, rm, gc, cat-manifest, export, render",
}

func init() {
	subcommands = append(subcommands, imageCmd)
}
