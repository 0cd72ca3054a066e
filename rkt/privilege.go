package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/pkg/fileperm"
)

// readOnlyCommands may be used by members of the rkt group: they read the
// data directory and change nothing (as rkt 1.x offered its rkt group).
// Every other command needs root.
var readOnlyCommands = map[string]bool{
	"rkt list":               true,
	"rkt status":             true,
	"rkt cat-manifest":       true,
	"rkt logs":               true,
	"rkt app list":           true,
	"rkt app status":         true,
	"rkt image list":         true,
	"rkt image cat-manifest": true,
	"rkt image export":       true,
	"rkt version":            true,
	"rkt api-service":        true, // only says what replaced it
	"rkt metadata-service":   true, // idem
}

// requireRoot refuses, before it touches anything, a command that changes
// rkt's state when not run as root.
func requireRoot(cmd *cobra.Command, _ []string) error {
	if os.Geteuid() == 0 || readOnlyCommands[cmd.CommandPath()] || cmd.Name() == "help" || strings.HasPrefix(cmd.CommandPath(), "rkt completion") {
		return nil
	}
	var allowed []string
	for c := range readOnlyCommands {
		allowed = append(allowed, c)
	}
	sort.Strings(allowed)
	return fmt.Errorf("%s changes rkt's state and must be run as root; members of the %q group may only use: %s",
		cmd.CommandPath(), fileperm.GroupName(), strings.Join(allowed, ", "))
}
