package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

func init() {
	addImageCommand(func() *cobra.Command {
		var grace time.Duration
		cmd := &cobra.Command{
			Use:   "gc",
			Short: "Remove images no pod uses that were not used within the grace period, and unreferenced layers and trees",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				s, inUse, err := openStoreInUse()
				if err != nil {
					return err
				}
				ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				res, err := s.GC(ctx, grace, inUse)
				if res != nil {
					for _, id := range res.Images {
						fmt.Fprintf(cmd.OutOrStdout(), "removed image %s\n", id)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "image gc: %d images, %d blobs (%s), %d layer trees removed\n",
						len(res.Images), res.Blobs, humanBytes(res.Bytes), res.Trees)
				}
				if err != nil {
					return fmt.Errorf("image gc failed: %w", err)
				}
				return nil
			},
		}
		cmd.Flags().DurationVar(&grace, "grace-period", 24*time.Hour, "keep images used or imported within this duration")
		return cmd
	})
}
