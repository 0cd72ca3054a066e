package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/stage0"
)

func init() {
	var rf runtimeFlags
	var app string
	var tty string
	cmd := podCommand(&cobra.Command{
		Use:               "enter [--app=NAME] UUID [CMD [ARGS...]]",
		Short:             "Run a command (default: a shell) in a running app of a pod",
		ValidArgsFunction: completePods(stage0.PodRunning),
		Args:              cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, err := newRuntimeNoStore(rf)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			useTTY := tty == "true" || (tty == "auto" && isTerminalFd(int(os.Stdin.Fd())) && isTerminalFd(int(os.Stdout.Fd())))
			code, err := execIn(ctx, rt, args[0], stage0.ExecOptions{App: app, Args: args[1:], TTY: useTTY}, true)
			if err != nil {
				return err
			}
			if code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}, &rf)
	cmd.Flags().StringVar(&app, "app", "", "the app to enter (needed when the pod has several)")
	cmd.Flags().StringVar(&tty, "tty", "auto", "allocate a terminal: true, false or auto (when stdin and stdout are terminals)")
	cmd.Flags().SetInterspersed(false)
	subcommands = append(subcommands, cmd)
}

// execIn runs a process in a pod's app with this process's stdio.
func execIn(ctx context.Context, rt *stage0.Runtime, uuid string, o stage0.ExecOptions, enter bool) (int, error) {
	o.Stdin, o.Stdout, o.Stderr = os.Stdin, os.Stdout, os.Stderr
	if o.TTY && isTerminalFd(int(os.Stdin.Fd())) {
		restore := rawTerminal(int(os.Stdin.Fd()))
		defer restore()
		sizes, stop := terminalSizes(int(os.Stdin.Fd()))
		defer stop()
		o.Resize = sizes
	}
	if enter {
		return rt.Enter(ctx, uuid, o)
	}
	return rt.Exec(ctx, uuid, o)
}
