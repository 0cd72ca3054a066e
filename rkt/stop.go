package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/stage0"
)

func init() {
	var rf runtimeFlags
	var force bool
	var timeout time.Duration
	var uuidFile string
	cmd := podCommand(&cobra.Command{
		Use:               "stop UUID...",
		Short:             "Stop running pods",
		ValidArgsFunction: completePods(stage0.PodRunning),
		RunE: eachPod(&rf, &uuidFile, "stop", func(ctx context.Context, rt *stage0.Runtime, uuid string) error {
			return rt.Stop(ctx, uuid, stage0.StopOptions{Force: force, Timeout: timeout})
		}),
	}, &rf)
	cmd.Flags().BoolVar(&force, "force", false, "kill the pod right away (SIGKILL) instead of stopping its apps gracefully")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "grace period of the apps before they are killed")
	cmd.Flags().StringVar(&uuidFile, "uuid-file", "", "read the pod UUID from this file")
	subcommands = append(subcommands, cmd)
}
