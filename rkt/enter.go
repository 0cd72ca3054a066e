package main

import (
	"github.com/spf13/cobra"

	"github.com/rkt/rkt/stage0"
)

func init() {
	addCommand("enter", func() *cobra.Command {
		cmd := execCommand(&cobra.Command{
			Use:               "enter [--app=NAME] UUID [--] [CMD [ARGS...]]",
			Short:             "Run a command (default: a shell) in a running app of a pod",
			ValidArgsFunction: completePods(stage0.PodRunning),
		}, true, "auto")
		return cmd
	})
}
