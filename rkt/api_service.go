package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func init() {
	subcommands = append(subcommands, &cobra.Command{
		Use:                "api-service",
		Short:              "Removed: use `rkt kubelet-service`",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return &exitError{code: 1, err: errors.New("`rkt api-service` was removed; `rkt kubelet-service` replaced it (it serves the Kubernetes CRI)")}
		},
	})
}
