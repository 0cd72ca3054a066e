package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rkt/rkt/pkg/buildinfo"
	"github.com/rkt/rkt/pkg/rkt1conf"
)

// globalFlags are rkt's global options, shared by every command.
type globalFlags struct {
	Dir             string   // data directory
	Debug           bool     // verbose output
	InsecureOptions []string // none, http, image, tls, ondisk, all
	LocalConfig     string   // administrator config directory
	SystemConfig    string   // vendor config directory
	UserConfig      string   // per-user config directory
}

var globals globalFlags

// command is a top-level command and what builds it. Building a command
// allocates its flags; a run of rkt builds only the command it runs (every
// command's flags were ~0.35 MiB of the kubelet-service's memory), or all
// of them when it does not name one (help, completion, a typo).
type command struct {
	name  string
	build func() *cobra.Command
}

// subcommands is filled by the init() of each command file.
var subcommands []command

// addCommand adds the top-level command name, built by build.
func addCommand(name string, build func() *cobra.Command) {
	subcommands = append(subcommands, command{name, build})
}

// treeCommands need every command built (they read the whole tree).
var treeCommands = map[string]bool{}

// commandName returns the top-level command that args (without the
// program name) run, "" when they name none of subcommands; global are the
// flags that may come before it.
func commandName(args []string, global *pflag.FlagSet) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return ""
		case strings.HasPrefix(a, "-"):
			// --flag value: the value is the next argument
			if f := global.Lookup(strings.TrimLeft(a, "-")); f != nil && f.NoOptDefVal == "" && !strings.Contains(a, "=") {
				i++
			}
			continue
		}
		for _, c := range subcommands {
			if c.name == a && !treeCommands[a] {
				return a
			}
		}
		return ""
	}
	return ""
}

func rootCmd() *cobra.Command { return rootCmdFor(os.Args[1:]) }

// rootCmdFor returns the command tree for running args: only the command
// they name, or all.
func rootCmdFor(args []string) *cobra.Command {
	root := &cobra.Command{
		Use:           "rkt",
		Short:         "rkt, the pod-native container runtime",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Version,
		// a subcommand that needs its own pre-run must call preRun
		PersistentPreRunE: preRun,
	}
	f := root.PersistentFlags()
	f.StringVar(&globals.Dir, "dir", buildinfo.DataDir, "rkt data directory")
	f.BoolVar(&globals.Debug, "debug", false, "print out more debug information to stderr")
	f.StringSliceVar(&globals.InsecureOptions, "insecure-options", []string{"none"}, "comma-separated list of security features to disable: none, http, image, tls, ondisk, all")
	f.StringVar(&globals.LocalConfig, "local-config", buildinfo.LocalConfigDir, "local configuration directory")
	f.StringVar(&globals.SystemConfig, "system-config", buildinfo.SystemConfigDir, "system configuration directory")
	f.StringVar(&globals.UserConfig, "user-config", defaultUserConfig(), "user configuration directory")
	only := commandName(args, f)
	for _, c := range subcommands {
		if only == "" || c.name == only {
			root.AddCommand(c.build())
		}
	}
	return root
}

// preRun checks the user's rights and takes the data directory from rkt
// 1.x's paths.d when --dir is not given.
func preRun(cmd *cobra.Command, args []string) error {
	if err := requireRoot(cmd, args); err != nil {
		return err
	}
	if cmd.Flags().Changed("dir") || !usesDataDir(cmd) {
		return nil
	}
	d, err := rkt1conf.DataDir(globals.SystemConfig, globals.LocalConfig)
	if err != nil {
		return fmt.Errorf("cannot read the data directory of paths.d: %w", err)
	}
	if d != "" {
		globals.Dir = d
	}
	return nil
}

// usesDataDir reports whether cmd reads or writes the data directory:
// version, help and completion do not, and a broken paths.d must not fail
// them.
func usesDataDir(cmd *cobra.Command) bool {
	p := cmd.CommandPath()
	return !(p == "rkt version" || cmd.Name() == "help" || strings.HasPrefix(p, "rkt completion"))
}

func defaultUserConfig() string {
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "rkt")
	}
	return ""
}

// insecure reports whether the named security feature was disabled.
func insecure(name string) bool {
	for _, o := range globals.InsecureOptions {
		if o == name || o == "all" {
			return true
		}
	}
	return false
}

// exitError carries a specific exit code out of a command (e.g. the app's
// exit code for `rkt run`).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return "exit status"
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 254
}
