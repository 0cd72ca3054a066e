package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/stage0"
)

func init() {
	addCommand("rm", func() *cobra.Command {
		var rf runtimeFlags
		var force bool
		var uuidFile string
		cmd := podCommand(&cobra.Command{
			Use:               "rm UUID...",
			Short:             "Remove pods that are not running",
			ValidArgsFunction: completePods(),
			RunE: eachPod(&rf, &uuidFile, "remove", func(ctx context.Context, rt *stage0.Runtime, uuid string) error {
				return rt.Remove(ctx, uuid, force)
			}),
		}, &rf)
		cmd.Flags().BoolVar(&force, "force", false, "stop running pods first")
		cmd.Flags().StringVar(&uuidFile, "uuid-file", "", "read the pod UUID from this file")
		return cmd
	})
}

// uuidArgs returns the UUIDs given as arguments or in a --uuid-file.
func uuidArgs(args []string, uuidFile string) ([]string, error) {
	if uuidFile != "" {
		if len(args) > 0 {
			return nil, errors.New("give UUIDs or --uuid-file, not both")
		}
		b, err := os.ReadFile(uuidFile)
		if err != nil {
			return nil, fmt.Errorf("cannot read --uuid-file: %w", err)
		}
		return []string{strings.TrimSpace(string(b))}, nil
	}
	if len(args) == 0 {
		return nil, errors.New("no pod UUID given")
	}
	return args, nil
}
