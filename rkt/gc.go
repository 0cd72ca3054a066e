package main

import (
	"errors"
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/kubeletsvc"
	"github.com/rkt/rkt/stage0"
)

func init() {
	addCommand("gc", func() *cobra.Command {
		var rf runtimeFlags
		var o stage0.GCOptions
		cmd := podCommand(&cobra.Command{
			Use:   "gc",
			Short: "Garbage-collect exited pods and release their resources",
			Long: `Release the resources of exited pods (network, mounts, cgroups) and move them
to exited-garbage; delete exited-garbage pods older than --grace-period,
prepared pods older than --expire-prepared and aborted prepares. The
kubelet-service's sandboxes are left to the kubelet, which removes them
when it is done with them (rkt rm removes one by hand).`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				rt, err := newRuntimeNoStore(rf)
				if err != nil {
					return err
				}
				ctx, cancel := signalContext()
				defer cancel()
				o.Owned = kubeletsvc.OwnsPod // the kubelet removes its sandboxes
				res, err := rt.GC(ctx, o)
				if err != nil {
					return fmt.Errorf("cannot collect pods: %w", err)
				}
				legacyNotice(cmd.ErrOrStderr(), true, false)
				removed := map[string]bool{}
				for _, u := range res.Removed {
					removed[u] = true
					fmt.Fprintf(cmd.OutOrStdout(), "Garbage collecting pod %q\n", u)
				}
				for _, u := range res.Collected {
					if !removed[u] {
						fmt.Fprintf(cmd.OutOrStdout(), "Moving pod %q to garbage\n", u)
					}
				}
				if res.Network != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "rkt: %v\n", res.Network)
				}
				if len(res.Errors) > 0 {
					var ids []string
					for u := range res.Errors {
						ids = append(ids, u)
					}
					sort.Strings(ids)
					for _, u := range ids {
						fmt.Fprintf(cmd.ErrOrStderr(), "rkt: pod %s: %v\n", u, res.Errors[u])
					}
					return &exitError{code: 254, err: fmt.Errorf("%d pods not collected", len(ids))}
				}
				if res.Network != nil {
					return &exitError{code: 254, err: errors.New("network resources of vanished pods not released")}
				}
				return nil
			},
		}, &rf)
		cmd.Flags().DurationVar(&o.GracePeriod, "grace-period", stage0.DefaultGCGracePeriod, "how long exited pods are kept before they are deleted")
		cmd.Flags().DurationVar(&o.ExpirePrepared, "expire-prepared", stage0.DefaultExpirePrepared, "how long prepared pods are kept")
		return cmd
	})
}
