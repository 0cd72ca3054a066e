package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func init() {
	addImageCommand(func() *cobra.Command {
		var overwrite bool
		cmd := &cobra.Command{
			Use:   "render IMAGE DIR",
			Short: "Write an image's root filesystem, all layers applied, into a directory",
			Args:  cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				ref, dest := args[0], args[1]
				s, img, err := openImage(ref)
				if err != nil {
					return err
				}
				if overwrite {
					if err := os.RemoveAll(dest); err != nil {
						return fmt.Errorf("cannot remove %q: %w", dest, err)
					}
				}
				ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				if err := s.RenderFlat(ctx, img, dest); err != nil {
					return fmt.Errorf("cannot render image %s into %q: %w", img.ID, dest, err)
				}
				return nil
			},
		}
		cmd.Flags().BoolVar(&overwrite, "overwrite", false, "remove DIR first if it exists")
		return cmd
	})
}
