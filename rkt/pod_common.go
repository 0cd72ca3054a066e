package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rkt/rkt/networking"
	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/store"
)

// runtimeFlags are the options every pod command shares: where stage1 is,
// the cgroup parent and the default network's bridge and subnet.
type runtimeFlags struct {
	stage1Path    string
	cgroupParent  string
	defaultBridge string
	defaultSubnet string
}

// addRuntimeFlags registers the runtime flags on fs.
func addRuntimeFlags(fs *pflag.FlagSet, f *runtimeFlags) {
	fs.StringVar(&f.stage1Path, "stage1-path", "", "path of the stage1 binary (default: stage1 next to rkt, else the configured location)")
	fs.StringVar(&f.cgroupParent, "cgroup-parent", stage0.DefaultCgroupParent, "cgroup under which pods are created")
	fs.StringVar(&f.defaultBridge, "default-bridge", "", "bridge of the default network")
	fs.StringVar(&f.defaultSubnet, "default-subnet", "", "subnet of the default network")
	for _, n := range []string{"default-bridge", "default-subnet"} {
		fs.MarkHidden(n)
	}
}

// newRuntime opens the store and returns a stage0 runtime for --dir.
func newRuntime(f runtimeFlags) (*stage0.Runtime, *store.Store, error) {
	s, err := openStore()
	if err != nil {
		return nil, nil, err
	}
	rt, err := stage0.New(runtimeConfig(f, s))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot set up the pod runtime: %w", err)
	}
	return rt, s, nil
}

func runtimeConfig(f runtimeFlags, s *store.Store) stage0.Config {
	return stage0.Config{
		DataDir:    globals.Dir,
		Stage1Path: f.stage1Path,
		Store:      s,
		Net: networking.Config{
			DataDir:       globals.Dir,
			ConfDir:       filepath.Join(globals.LocalConfig, "net.d"),
			DefaultBridge: f.defaultBridge,
			DefaultSubnet: f.defaultSubnet,
		},
		CgroupParent: f.cgroupParent,
		Debug:        globals.Debug,
		Logger:       debugLogger(),
	}
}

// newRuntimeNoStore returns a stage0 runtime for commands that do not
// resolve images (list, status, stop...): they never open the store.
func newRuntimeNoStore(f runtimeFlags) (*stage0.Runtime, error) {
	rt, err := stage0.New(runtimeConfig(f, nil))
	if err != nil {
		return nil, fmt.Errorf("cannot set up the pod runtime: %w", err)
	}
	return rt, nil
}

// debugLogger is the log of --debug: every level to stderr; without
// --debug it discards everything (the CLI reports by its output and
// errors).
func debugLogger() *slog.Logger {
	if !globals.Debug {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// signalContext is cancelled by SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// podCommand builds a cobra command with the runtime flags.
func podCommand(c *cobra.Command, f *runtimeFlags) *cobra.Command {
	addRuntimeFlags(c.Flags(), f)
	return c
}

// completePods completes a pod UUID argument (shell completion) with the
// pods of --dir in the given states (all when none).
func completePods(states ...stage0.PodState) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		rt, err := newRuntimeNoStore(runtimeFlags{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		pods, err := rt.List(cmd.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []string
		for _, p := range pods {
			if len(states) > 0 && !hasState(states, p.State) {
				continue
			}
			if strings.HasPrefix(p.UUID, prefix) {
				out = append(out, p.UUID+"\t"+string(p.State))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

func hasState(states []stage0.PodState, s stage0.PodState) bool {
	for _, x := range states {
		if x == s {
			return true
		}
	}
	return false
}
