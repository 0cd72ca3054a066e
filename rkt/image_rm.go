package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/store"
)

func init() {
	addImageCommand(func() *cobra.Command {
		var force bool
		cmd := &cobra.Command{
			Use:   "rm IMAGE...",
			Short: "Remove images (by ID, ID prefix or name) with all their names",
			Long: `Remove images from the store. IMAGE is an image ID (sha256:...), a
unique ID prefix, or a name (name:tag, name@digest). Every name of the
image is removed with it. An image that a pod uses is kept unless --force.`,
			Args: cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				s, inUse, err := openStoreInUse()
				if err != nil {
					return err
				}
				failed := 0
				for _, ref := range args {
					img, err := s.RemoveImage(ref, store.RemoveOptions{Force: force, InUse: inUse})
					if err != nil {
						fmt.Fprintf(cmd.ErrOrStderr(), "rkt: cannot remove image %q: %v\n", ref, err)
						failed++
						continue
					}
					fmt.Fprintf(cmd.OutOrStdout(), "removed image %s (%s)\n", img.ID, joinNames(img))
				}
				if failed > 0 {
					return &exitError{code: 254, err: fmt.Errorf("%d of %d images not removed", failed, len(args))}
				}
				return nil
			},
		}
		cmd.Flags().BoolVar(&force, "force", false, "remove images even if pods use them")
		return cmd
	})
}
