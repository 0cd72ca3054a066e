package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/store"
)

// fetchFlags are the options of `rkt fetch`.
type fetchFlags struct {
	pullPolicy string // never, new, update
	creds      string // user:password for the image's registry
	noProgress bool   // never draw progress bars
}

func init() {
	addCommand("fetch", func() *cobra.Command {
		var f fetchFlags
		cmd := &cobra.Command{
			Use:   "fetch IMAGE...",
			Short: "Fetch images into the store and print their IDs",
			Long: `Fetch images into rkt's store and print the ID of each.

IMAGE is a registry reference (docker://quay.io/org/app:1.0, busybox,
name@sha256:...), oci-archive:PATH, docker-archive:PATH (as docker save
writes), oci:DIR[:tag] (an OCI image layout) or aci:PATH (an ACI of rkt
1.x, named by its name and version label).

A registry that sends nothing for 30s fails the fetch; the environment
variable RKT_FETCH_IDLE_TIMEOUT (e.g. 2m) changes that.`,
			Args: cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error { return runFetch(cmd, args, f) },
		}
		cmd.Flags().StringVar(&f.pullPolicy, "pull-policy", string(store.PullNew), "when to fetch from the registry: never (store only), new (when not in the store), update (when the registry has a newer image)")
		cmd.Flags().StringVar(&f.creds, "creds", "", "credentials for the image's registry, as user:password")
		cmd.Flags().BoolVar(&f.noProgress, "no-progress", false, "do not show download progress")
		return cmd
	})
}

func runFetch(cmd *cobra.Command, args []string, f fetchFlags) error {
	opts, err := fetchOptions(f)
	if err != nil {
		return err
	}
	s, err := openStore()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var failed []string
	for _, ref := range args {
		o := opts
		var bars *progressBars
		if !f.noProgress && isTerminal(os.Stderr) {
			bars = newProgressBars(os.Stderr, ref)
			o.Progress = bars.Update
		}
		var status func(string)
		if bars != nil {
			status = bars.SetStatus
		}
		img, err := fetchWithStatus(ctx, s, ref, o, status)
		if bars != nil {
			bars.Finish(err == nil)
		}
		if err != nil {
			if ctx.Err() != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "rkt: fetch of %s interrupted\n", ref)
				failed = append(failed, ref)
				break
			}
			if strings.Contains(err.Error(), strings.TrimPrefix(ref, "docker://")) {
				fmt.Fprintf(cmd.ErrOrStderr(), "rkt: %v\n", err) // the error names the image already
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "rkt: cannot fetch %s: %v\n", ref, err)
			}
			failed = append(failed, ref)
			continue
		}
		fmt.Fprintln(cmd.OutOrStdout(), img.ID)
	}
	if len(failed) > 0 {
		return &exitError{code: 254, err: fmt.Errorf("%d of %d images not fetched: %s", len(failed), len(args), strings.Join(failed, ", "))}
	}
	return nil
}

// fetchWithStatus is store.Pull with the pods' images protected, telling
// status (if not nil) what it does after the downloads.
func fetchWithStatus(ctx context.Context, s *store.Store, ref string, o store.FetchOptions, status func(string)) (*store.Image, error) {
	return s.Pull(ctx, ref, store.PullOptions{FetchOptions: o, Status: status, InUse: imagesInUse})
}

// fetchOptions turns the flags and global options into store options.
func fetchOptions(f fetchFlags) (store.FetchOptions, error) {
	policy, err := store.ParsePullPolicy(f.pullPolicy)
	if err != nil {
		return store.FetchOptions{}, err
	}
	auth, err := parseCreds(f.creds)
	if err != nil {
		return store.FetchOptions{}, err
	}
	regs, err := loadRegistryConfig()
	if err != nil {
		return store.FetchOptions{}, err
	}
	return store.FetchOptions{
		PullPolicy:   policy,
		Auth:         auth,
		Registries:   regs,
		InsecureHTTP: insecure("http"),
		InsecureTLS:  insecure("tls"),
	}, nil
}

// parseCreds parses --creds user:password ("" means none).
func parseCreds(s string) (*store.Auth, error) {
	if s == "" {
		return nil, nil
	}
	user, pass, ok := strings.Cut(s, ":")
	if !ok || user == "" {
		return nil, fmt.Errorf("invalid --creds %q: want user:password", redact(s))
	}
	return &store.Auth{Username: user, Password: pass}, nil
}

// redact hides the password part of user:password.
func redact(creds string) string {
	if user, _, ok := strings.Cut(creds, ":"); ok {
		return user + ":***"
	}
	return "***"
}
