package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

func init() {
	addImageCommand(func() *cobra.Command {
		var overwrite bool
		cmd := &cobra.Command{
			Use:   "export IMAGE OUTPUT",
			Short: "Export an image as an oci-archive (a tar of an OCI image layout)",
			Args:  cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				ref, out := args[0], args[1]
				s, img, err := openImage(ref)
				if err != nil {
					return err
				}
				if _, err := os.Lstat(out); err == nil && !overwrite {
					return fmt.Errorf("cannot export image %s: %q exists (use --overwrite)", img.ID, out)
				}
				name := ""
				if len(img.Names) > 0 {
					name = img.Names[0]
				}
				ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				// Write next to the destination, then rename: no half archive.
				tmp, err := os.CreateTemp(filepath.Dir(out), ".rkt-export-*")
				if err != nil {
					return fmt.Errorf("cannot export image %s to %q: %w", img.ID, out, err)
				}
				defer os.Remove(tmp.Name())
				if err := s.ExportOCIArchive(ctx, img, name, tmp); err != nil {
					tmp.Close()
					return fmt.Errorf("cannot export image %s: %w", img.ID, err)
				}
				if err := tmp.Close(); err != nil {
					return fmt.Errorf("cannot write %q: %w", tmp.Name(), err)
				}
				// the mode any new file of the invoker gets (0644 under
				// umask 022), not CreateTemp's 0600
				if err := os.Chmod(tmp.Name(), 0o666&^umask()); err != nil {
					return fmt.Errorf("cannot chmod %q: %w", tmp.Name(), err)
				}
				if err := os.Rename(tmp.Name(), out); err != nil {
					return fmt.Errorf("cannot move the archive to %q: %w", out, err)
				}
				return nil
			},
		}
		cmd.Flags().BoolVar(&overwrite, "overwrite", false, "replace OUTPUT if it exists")
		return cmd
	})
}

// umask is the process's file mode creation mask.
func umask() os.FileMode {
	m := unix.Umask(0)
	unix.Umask(m)
	return os.FileMode(m)
}
