package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Services of rkt 1.x that are gone. Their units (rkt-api.service,
// rkt-metadata.service) may still start them after an upgrade: they say
// what replaced them and exit with removedExitCode, which the upgrade
// step's units do not restart on (see dist/rkt1-upgrade).
func init() {
	for _, c := range []struct{ name, msg string }{
		{"api-service", "`rkt api-service` was removed; `rkt kubelet-service` replaced it (it serves the Kubernetes CRI; its unit is rkt-kubelet-service.socket). See Documentation/upgrading.md"},
		{"metadata-service", "`rkt metadata-service` was removed: apps of this rkt have no appc metadata service. See Documentation/upgrading.md"},
	} {
		addCommand(c.name, func() *cobra.Command {
			return &cobra.Command{
				Use:                c.name,
				Short:              "Removed: " + c.msg,
				Hidden:             true,
				DisableFlagParsing: true,
				RunE: func(cmd *cobra.Command, args []string) error {
					return &exitError{code: removedExitCode, err: errors.New(c.msg)}
				},
			}
		})
	}
}

// removedExitCode is the exit status of a removed command: EX_CONFIG of
// sysexits.h, "configuration error".
const removedExitCode = 78
