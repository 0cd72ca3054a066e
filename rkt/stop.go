package main

import (
	"fmt"
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
		RunE: func(cmd *cobra.Command, args []string) error {
			args, err := uuidArgs(args, uuidFile)
			if err != nil {
				return err
			}
			rt, err := newRuntimeNoStore(rf)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			failed := 0
			for _, u := range args {
				if err := rt.Stop(ctx, u, stage0.StopOptions{Force: force, Timeout: timeout}); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "rkt: cannot stop pod %s: %v\n", u, err)
					failed++
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", u)
			}
			if failed > 0 {
				return &exitError{code: 254, err: fmt.Errorf("%d of %d pods not stopped", failed, len(args))}
			}
			return nil
		},
	}, &rf)
	cmd.Flags().BoolVar(&force, "force", false, "kill the pod right away (SIGKILL) instead of stopping its apps gracefully")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "grace period of the apps before they are killed")
	cmd.Flags().StringVar(&uuidFile, "uuid-file", "", "read the pod UUID from this file")
	subcommands = append(subcommands, cmd)
}
