package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func appSandboxCmd() *cobra.Command {
	var f podFlags
	var limits appFlags // --cpu and --memory of the pod as a whole
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Start an empty pod; add apps with `rkt app add`",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, _, err := f.podOptions()
			if err != nil {
				return &exitError{code: 254, err: err}
			}
			if len(f.namedPorts) > 0 {
				return &exitError{code: 254, err: fmt.Errorf("invalid --port %s:...: a sandbox has no images to name ports; use --port=[HOSTIP:]HOSTPORT:CONTAINERPORT[/PROTO]", f.namedPorts[0].name)}
			}
			if o.Resources, err = limits.resources(); err != nil {
				return &exitError{code: 254, err: err}
			}
			rt, err := newRuntimeNoStore(f.rt)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			uuid, err := rt.Sandbox(ctx, o)
			if uuid != "" {
				if serr := saveUUID(f.uuidFileSave, uuid); serr != nil && err == nil {
					err = serr
				}
			}
			if err != nil {
				return fmt.Errorf("cannot start the sandbox: %w", err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), uuid)
			return nil
		},
	}
	fs := podFlagSet(&f, nil, false)
	for _, n := range []string{"pull-policy", "set-env", "interactive", "help"} {
		fs.MarkHidden(n)
	}
	cmd.Flags().AddFlagSet(fs)
	cmd.Flags().StringVar(&limits.cpu, "cpu", "", "CPU limit of the whole pod, in cores (0.5) or millicores (500m)")
	cmd.Flags().StringVar(&limits.memory, "memory", "", "memory limit of the whole pod, e.g. 256M")
	return cmd
}
