package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

func init() {
	addImageCommand(func() *cobra.Command {
		var pretty bool
		cmd := &cobra.Command{
			Use:   "cat-manifest IMAGE",
			Short: "Print the image manifest of an image (by ID, ID prefix or name)",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				s, img, err := openImage(args[0])
				if err != nil {
					return err
				}
				raw, err := s.ReadBlob(img.ManifestDigest)
				if err != nil {
					return fmt.Errorf("cannot read the manifest of image %s: %w", img.ID, err)
				}
				if pretty {
					var buf bytes.Buffer
					if err := json.Indent(&buf, raw, "", "  "); err != nil {
						return fmt.Errorf("manifest of image %s is not valid JSON: %w", img.ID, err)
					}
					buf.WriteByte('\n')
					raw = buf.Bytes()
				}
				_, err = cmd.OutOrStdout().Write(raw)
				return err
			},
		}
		cmd.Flags().BoolVar(&pretty, "pretty-print", true, "indent the JSON (false: the stored bytes, whose digest is the manifest digest)")
		return cmd
	})
}
