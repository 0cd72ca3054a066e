package main

import (
	"github.com/spf13/cobra"

	"github.com/rkt/rkt/stage0"
)

func init() {
	cmd := execCommand(&cobra.Command{
		Use:               "enter [--app=NAME] UUID [--] [CMD [ARGS...]]",
		Short:             "Run a command (default: a shell) in a running app of a pod",
		ValidArgsFunction: completePods(stage0.PodRunning),
	}, true, "auto")
	subcommands = append(subcommands, cmd)
}
