package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/stage0"
)

// podAction is the body of a command that acts on one pod: rt is stage0
// opened with the global and runtime flags, uuid the pod's full UUID
// (resolved from the first argument, a UUID or a unique prefix of one),
// args the arguments after it, and ctx ends on SIGINT or SIGTERM.
type podAction func(ctx context.Context, cmd *cobra.Command, rt *stage0.Runtime, uuid string, args []string) error

// onePod returns the RunE of a command whose first argument names a pod.
func onePod(rf *runtimeFlags, act podAction) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return &exitError{code: 254, err: fmt.Errorf("no pod UUID given")}
		}
		rt, err := newRuntimeNoStore(*rf)
		if err != nil {
			return err
		}
		uuid, err := rt.ResolveUUID(args[0])
		if err != nil {
			return err
		}
		ctx, cancel := signalContext()
		defer cancel()
		return act(ctx, cmd, rt, uuid, args[1:])
	}
}

// eachPod returns the RunE of a command that does the same to every pod
// named by its arguments or by *uuidFile (stop, rm): it prints the UUID of
// each pod done, reports each failure and fails when any pod failed.
func eachPod(rf *runtimeFlags, uuidFile *string, verb string, act func(ctx context.Context, rt *stage0.Runtime, uuid string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		args, err := uuidArgs(args, *uuidFile)
		if err != nil {
			return err
		}
		rt, err := newRuntimeNoStore(*rf)
		if err != nil {
			return err
		}
		ctx, cancel := signalContext()
		defer cancel()
		failed := 0
		for _, u := range args {
			if err := act(ctx, rt, u); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "rkt: cannot %s pod %s: %v\n", verb, u, err)
				failed++
				continue
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", u)
		}
		if failed > 0 {
			return &exitError{code: 254, err: fmt.Errorf("%d of %d pods not %s", failed, len(args), pastTense(verb))}
		}
		return nil
	}
}

func pastTense(verb string) string {
	switch verb {
	case "stop":
		return "stopped"
	case "remove":
		return "removed"
	}
	return verb + "ed"
}

// execCommand builds `rkt enter` and `rkt app exec`: args run in a running
// app with this process's stdio (a shell when enter and no command given),
// rkt exiting with the process's exit code. Both parse
//
//	[flags] UUID [flags] [--] CMD [ARGS...]
//
// rkt's flags may come before and after the UUID; the command starts at the
// first word after them (or after "--") and keeps all that follows, its own
// flags (sh -c) and "--" included.
func execCommand(c *cobra.Command, enter bool, defaultTTY string) *cobra.Command {
	var rf runtimeFlags
	var app, tty string
	run := onePod(&rf, func(ctx context.Context, cmd *cobra.Command, rt *stage0.Runtime, uuid string, args []string) error {
		useTTY := tty == "true" || (tty == "auto" && isTerminalFd(int(os.Stdin.Fd())) && isTerminalFd(int(os.Stdout.Fd())))
		code, err := execIn(ctx, rt, uuid, stage0.ExecOptions{App: app, Args: args, TTY: useTTY}, enter)
		if err != nil {
			return err
		}
		if code != 0 {
			return &exitError{code: code}
		}
		return nil
	})
	c.Args = cobra.MinimumNArgs(1)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		args, err := execArgs(cmd, args)
		if err != nil {
			return &exitError{code: 254, err: err}
		}
		if h, _ := cmd.Flags().GetBool("help"); h {
			return cmd.Help()
		}
		if !enter && len(args) < 2 {
			return &exitError{code: 254, err: fmt.Errorf("no command given: %s", cmd.UseLine())}
		}
		return run(cmd, args)
	}
	cmd := podCommand(c, &rf)
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringVar(&app, "app", "", "the app (needed when the pod has several)")
	tty = defaultTTY
	cmd.Flags().Var((*ttyFlag)(&tty), "tty", "allocate a terminal: true, false or auto (when stdin and stdout are terminals); --tty alone is true")
	cmd.Flags().Lookup("tty").NoOptDefVal = "true"
	return cmd
}

// ttyFlag is --tty: true, false or auto. Alone it means true, as the usage
// line ([--tty]) shows it; it never takes the next word (the UUID, "--" or
// the command) as its value.
type ttyFlag string

func (f *ttyFlag) String() string { return string(*f) }
func (f *ttyFlag) Type() string   { return "true|false|auto" }
func (f *ttyFlag) Set(v string) error {
	switch v {
	case "true", "false", "auto":
		*f = ttyFlag(v)
		return nil
	}
	return fmt.Errorf("want true, false or auto, not %q", v)
}

// execArgs returns UUID CMD ARGS... from what cobra left of the command
// line: it stops at the UUID (flags not interspersed), so the flags after
// the UUID and a "--" before the command are parsed here.
func execArgs(cmd *cobra.Command, args []string) ([]string, error) {
	if cmd.ArgsLenAtDash() >= 0 {
		// "--" before the UUID: all after it are arguments
		return args, nil
	}
	fs := cmd.Flags()
	if err := fs.Parse(args[1:]); err != nil {
		return nil, fmt.Errorf("%w (put the command after --: %s)", err, cmd.UseLine())
	}
	return append([]string{args[0]}, fs.Args()...), nil
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
