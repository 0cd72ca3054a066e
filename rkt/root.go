package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

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

// subcommands is filled by the init() of each command file.
var subcommands []*cobra.Command

func rootCmd() *cobra.Command {
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
	for _, c := range subcommands {
		root.AddCommand(c)
	}
	return root
}

// preRun checks the user's rights and takes the data directory from rkt
// 1.x's paths.d when --dir is not given.
func preRun(cmd *cobra.Command, args []string) error {
	if err := requireRoot(cmd, args); err != nil {
		return err
	}
	if cmd.Flags().Changed("dir") {
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
