package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/stage0"
)

func init() {
	addCommand("stop", func() *cobra.Command {
		var rf runtimeFlags
		var force bool
		var timeout time.Duration
		var uuidFile string
		var cmd *cobra.Command
		cmd = podCommand(&cobra.Command{
			Use:               "stop UUID...",
			Short:             "Stop running pods",
			Long:              "Stop running pods: each app gets its stop signal (SIGTERM unless the image or --stop-signal set another), then SIGKILL after --timeout; --force kills at once.",
			ValidArgsFunction: completePods(stage0.PodRunning),
			RunE: eachPod(&rf, &uuidFile, "stop", func(ctx context.Context, rt *stage0.Runtime, uuid string) error {
				if ps, err := rt.Status(ctx, uuid); err == nil && ps.State == stage0.PodRunning {
					fmt.Fprintln(cmd.ErrOrStderr(), stopNotice(ps.UUID, force, timeout))
				}
				return rt.Stop(ctx, uuid, stage0.StopOptions{Force: force, Timeout: timeout})
			}),
		}, &rf)
		cmd.Flags().BoolVar(&force, "force", false, "kill the pod right away (SIGKILL) instead of stopping its apps gracefully")
		cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "grace period of the apps before they are killed")
		cmd.Flags().StringVar(&uuidFile, "uuid-file", "", "read the pod UUID from this file")
		return cmd
	})
}

// stopNotice says what rkt stop waits for.
func stopNotice(uuid string, force bool, timeout time.Duration) string {
	if force {
		return fmt.Sprintf("rkt: killing pod %s (SIGKILL)", uuid)
	}
	if timeout <= 0 {
		timeout = 10 * time.Second // stage0's default
	}
	return fmt.Sprintf("rkt: waiting up to %s for pod %s to stop (each app's stop signal, SIGTERM by default, then SIGKILL)", timeout, uuid)
}
