package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

func init() {
	var rf runtimeFlags
	var force bool
	var uuidFile string
	cmd := podCommand(&cobra.Command{
		Use:               "rm UUID...",
		Short:             "Remove pods that are not running",
		ValidArgsFunction: completePods(),
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
				if err := rt.Remove(ctx, u, force); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "rkt: cannot remove pod %s: %v\n", u, err)
					failed++
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", u)
			}
			if failed > 0 {
				return &exitError{code: 254, err: fmt.Errorf("%d of %d pods not removed", failed, len(args))}
			}
			return nil
		},
	}, &rf)
	cmd.Flags().BoolVar(&force, "force", false, "stop running pods first")
	cmd.Flags().StringVar(&uuidFile, "uuid-file", "", "read the pod UUID from this file")
	subcommands = append(subcommands, cmd)
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
