package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/store"
)

const runLong = `Run a pod of one or more apps, each from an image.

Usage: rkt run [pod flags] IMAGE [app flags] [-- ARGS...] [--- IMAGE [app flags] ...]

IMAGE is an image ID, a name in the store, or anything rkt fetch accepts
(fetched when missing, see --pull-policy). App flags (--exec, --set-env,
--user, --group, --mount, --cpu, --memory, --caps-retain, --caps-remove,
--seccomp, --readonly-rootfs, --name, ...) apply to the image before them;
"--" passes the rest (up to "---") as the app's arguments.

By default rkt run stays in the foreground: the apps' output goes to the
terminal, Ctrl-C stops the pod and rkt exits with the app's exit code. With
--detach it prints the pod's UUID and returns; the pod keeps running.`

func init() {
	addCommand("run", func() *cobra.Command { return podArgsCommand("run", "Run a pod", runLong, true) })
	addCommand("prepare", func() *cobra.Command {
		return podArgsCommand("prepare", "Prepare a pod to run later with run-prepared",
			"Prepare a pod and print its UUID; it starts with `rkt run-prepared UUID`.\n\nUsage: rkt prepare [pod flags] IMAGE [app flags] [-- ARGS...] [--- IMAGE ...]", false)
	})
}

// podArgsCommand builds run or prepare, which parse their own flags.
func podArgsCommand(use, short, long string, run bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:                use + " [flags] IMAGE [app flags] [--- IMAGE ...]",
		Short:              short,
		Long:               long,
		DisableFlagParsing: true,
	}
	var f podFlags
	// registered for the help output only; parsing is done by parsePodArgs
	cmd.Flags().AddFlagSet(podFlagSet(&podFlags{}, nil, run))
	cmd.Flags().AddFlagSet(appFlagSet(&appFlags{}))
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		fs := podFlagSet(&f, cmd.InheritedFlags(), run)
		apps, err := parsePodArgs(args, fs)
		if err != nil {
			return &exitError{code: 254, err: err}
		}
		if f.help {
			return cmd.Help()
		}
		if len(apps) == 0 {
			return &exitError{code: 254, err: errors.New("no image given")}
		}
		return runPodCommand(cmd, &f, apps, run)
	}
	return cmd
}

func runPodCommand(cmd *cobra.Command, f *podFlags, apps []*appArg, run bool) error {
	podOpts, vols, err := f.podOptions()
	if err != nil {
		return &exitError{code: 254, err: err}
	}
	if f.interactive && len(apps) != 1 {
		return &exitError{code: 254, err: errors.New("--interactive needs exactly one app")}
	}
	rt, s, err := newRuntime(f.rt)
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	opts := stage0.PrepareOptions{PodOptions: podOpts}
	t0 := time.Now()
	log := debugLogger()
	defer func() { log.Debug("command done", "command", cmd.Name(), "after", time.Since(t0)) }()
	for _, a := range apps {
		id, err := fetchForRun(ctx, s, a.image, f)
		if err != nil {
			return err
		}
		o, err := a.flags.appOptions(id, f.setEnv, vols)
		if err != nil {
			return &exitError{code: 254, err: err}
		}
		if f.interactive {
			o.TTY, o.Stdin = true, true
		}
		if err := fetchImageMounts(ctx, s, &o, f); err != nil {
			return err
		}
		opts.Apps = append(opts.Apps, o)
	}
	if len(f.namedPorts) > 0 {
		var ids []string
		for _, a := range opts.Apps {
			ids = append(ids, a.Image)
		}
		exposed, err := exposedPortNames(s, ids)
		if err != nil {
			return err
		}
		ports, err := resolvePortNames(f.namedPorts, exposed)
		if err != nil {
			return &exitError{code: 254, err: err}
		}
		opts.Ports = append(opts.Ports, ports...)
	}
	if !run {
		uuid, err := rt.Prepare(ctx, opts)
		if err != nil {
			return fmt.Errorf("cannot prepare the pod: %w", err)
		}
		if err := saveUUID(f.uuidFileSave, uuid); err != nil {
			return err
		}
		fmt.Fprintln(cmd.OutOrStdout(), uuid)
		return nil
	}
	log.Debug("images resolved", "after", time.Since(t0))
	uuid, err := rt.Run(ctx, opts)
	log.Debug("pod started", "after", time.Since(t0))
	if uuid != "" {
		if serr := saveUUID(f.uuidFileSave, uuid); serr != nil && err == nil {
			err = serr
		}
	}
	if err != nil {
		if _, serr := rt.Status(ctx, uuid); uuid != "" && serr == nil {
			// as docker keeps a container whose start failed: say where it is
			return fmt.Errorf("cannot run the pod: %w\n(pod %s is kept for inspection with `rkt status` and `rkt logs`; `rkt rm %s` or `rkt gc` removes it)", err, uuid, uuid)
		}
		return fmt.Errorf("cannot run the pod: %w", err)
	}
	if f.detach {
		fmt.Fprintln(cmd.OutOrStdout(), uuid)
		return nil
	}
	return foreground(ctx, rt, uuid, f.interactive, cmd.OutOrStdout(), cmd.ErrOrStderr())
}

// fetchForRun makes the image available in the store (per --pull-policy),
// with rkt fetch's per-layer progress bars when stderr is a terminal, and
// returns its ID.
func fetchForRun(ctx context.Context, s *store.Store, ref string, f *podFlags) (string, error) {
	o, err := fetchOptions(fetchFlags{pullPolicy: f.pullPolicy})
	if err != nil {
		return "", &exitError{code: 254, err: err}
	}
	if o.PullPolicy != store.PullUpdate {
		if img, err := s.ResolveImage(ref); err == nil {
			return img.ID, nil
		}
	}
	var status func(string)
	var bars *progressBars
	if !f.noProgress && isTerminal(os.Stderr) {
		bars = newProgressBars(os.Stderr, ref)
		o.Progress, status = bars.Update, bars.SetStatus
	}
	img, err := fetchWithStatus(ctx, s, ref, o, status)
	if bars != nil {
		bars.Finish(err == nil)
	}
	if err != nil {
		return "", fmt.Errorf("cannot fetch image %s: %w", ref, err)
	}
	return img.ID, nil
}

// fetchImageMounts fetches the images of --mount image=REF and names them
// by ID.
func fetchImageMounts(ctx context.Context, s *store.Store, o *stage0.AppOptions, f *podFlags) error {
	for i, m := range o.Mounts {
		if m.Image == "" {
			continue
		}
		id, err := fetchForRun(ctx, s, m.Image, f)
		if err != nil {
			return err
		}
		o.Mounts[i].Image = id
	}
	return nil
}

func saveUUID(path, uuid string) error {
	if path == "" {
		return nil
	}
	if err := os.WriteFile(path, []byte(uuid), 0o644); err != nil {
		return fmt.Errorf("cannot save the pod UUID to %q: %w", path, err)
	}
	return nil
}

// foreground shows the pod's output until it exits (attached to the
// terminal with --interactive), stops it on SIGINT/SIGTERM, and returns the
// apps' exit code.
func foreground(ctx context.Context, rt *stage0.Runtime, uuid string, interactive bool, stdout, stderr io.Writer) error {
	bg := context.Background()
	var err error
	if interactive {
		err = attachTerminal(ctx, rt, uuid, "")
	} else {
		err = showLogs(ctx, rt, uuid, nil, true, stdout, stderr)
	}
	if ctx.Err() != nil {
		sctx, cancel := context.WithTimeout(bg, 2*time.Minute)
		defer cancel()
		if serr := rt.Stop(sctx, uuid, stage0.StopOptions{}); serr != nil {
			return fmt.Errorf("cannot stop pod %s: %w", uuid, serr)
		}
	} else if err != nil {
		return err
	}
	ps, err := rt.Wait(bg, uuid)
	if err != nil {
		return err
	}
	if ps.ExitCode != 0 {
		return &exitError{code: ps.ExitCode}
	}
	return nil
}

// attachTerminal connects this process's stdio to a running app.
func attachTerminal(ctx context.Context, rt *stage0.Runtime, uuid, app string) error {
	tty := isTerminalFd(int(os.Stdin.Fd()))
	opts := stage0.AttachOptions{App: app, TTY: true, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	if tty {
		restore := rawTerminal(int(os.Stdin.Fd()))
		defer restore()
		sizes, stop := terminalSizes(int(os.Stdin.Fd()))
		defer stop()
		opts.Resize = sizes
	}
	return rt.Attach(ctx, uuid, opts)
}
