//go:build genman

// The man page generator: built only with -tags genman (`make man`), so the
// installed rkt carries neither the command nor cobra/doc's dependencies.

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/rkt/rkt/pkg/buildinfo"
)

func init() {
	readOnlyCommands["rkt gen-man"] = true
	treeCommands["gen-man"] = true
	addCommand("gen-man", func() *cobra.Command {
		return &cobra.Command{
			Use:    "gen-man DIR",
			Short:  "Write the man pages of every command to DIR (rkt.1, rkt-run.1, ...)",
			Hidden: true,
			Args:   cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := os.MkdirAll(args[0], 0o755); err != nil {
					return fmt.Errorf("cannot create %s: %w", args[0], err)
				}
				root := cmd.Root()
				// the builder's home is no default of the installed rkt
				if f := root.PersistentFlags().Lookup("user-config"); f != nil {
					f.DefValue = "$XDG_CONFIG_HOME/rkt, else ~/.config/rkt"
				}
				root.InitDefaultCompletionCmd()
				root.DisableAutoGenTag = true // no generation date in the pages
				h := &doc.GenManHeader{Section: "1", Source: "rkt " + buildinfo.Version, Manual: "rkt manual"}
				if err := doc.GenManTree(root, h, args[0]); err != nil {
					return fmt.Errorf("cannot write the man pages: %w", err)
				}
				return nil
			},
		}
	})
}
