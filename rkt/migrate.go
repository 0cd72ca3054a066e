package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/pkg/rkt1conf"
	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/store"
)

type migrateFlags struct {
	dryRun bool
	remove bool
	once   bool
}

func init() {
	addCommand("migrate", func() *cobra.Command {
		var f migrateFlags
		cmd := &cobra.Command{
			Use:   "migrate",
			Short: "Import the images of rkt 1.x and report what else it left",
			Long: `Find what rkt 1.x left in the data directory (its ql image index, ACI images,
rendered trees, pods) and in the configuration directories. Import its ACI
images into this rkt's store (names: the ACI name and version label; names
without a host go under localhost/), list its pods, which this rkt neither
runs nor removes, and the configuration it does not use. rkt 1.x's files are
only read. Running it again imports again, to the same image IDs.

With --remove-legacy, delete what rkt 1.x left once its images are imported:
its pods (unmounting what is mounted below them; refused while one runs),
its index, ACIs and trees. See Documentation/upgrading.md.`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				ctx, cancel := signalContext()
				defer cancel()
				return runMigrate(ctx, cmd.OutOrStdout(), f)
			},
		}
		cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "only report; import and remove nothing")
		cmd.Flags().BoolVar(&f.remove, "remove-legacy", false, "after importing, delete rkt 1.x's pods, index, ACIs and trees")
		cmd.Flags().BoolVar(&f.once, "once", false, "import nothing if rkt 1.x's images were imported before (for the package's upgrade step)")
		return cmd
	})
}

func runMigrate(ctx context.Context, w io.Writer, f migrateFlags) error {
	for _, n := range rkt1conf.Unused(globals.SystemConfig, globals.LocalConfig) {
		fmt.Fprintf(w, "config: %s\n", n)
	}
	for _, n := range configWritable() {
		fmt.Fprintf(w, "config: %s: whoever may change it sets what root's rkt reads (data directory, registries and credentials, networks); trust them as root or take their write access away\n", n)
	}
	legacy, err := store.FindLegacy(globals.Dir)
	if err != nil {
		return err
	}
	pods, err := stage0.LegacyPods(globals.Dir)
	if err != nil {
		return err
	}
	if legacy == nil && len(pods) == 0 {
		fmt.Fprintf(w, "no data of rkt 1.x in %s\n", globals.Dir)
		return nil
	}
	failed := 0
	if legacy != nil {
		fmt.Fprintf(w, "rkt 1.x store in %s: %d ACIs (%d bytes), %d rendered trees, index %s\n",
			legacy.Dir, len(legacy.Images), legacy.Bytes, len(legacy.Trees), orNone(legacy.Index))
		if f.once && legacy.Imported != nil {
			fmt.Fprintf(w, "its images were imported at %s (`rkt migrate` imports them again)\n", legacy.Imported.At.Format(time.RFC3339))
			if f.remove {
				failed += recordedFailures(w, legacy)
			}
		} else if !f.dryRun {
			st, err := openStore()
			if err != nil {
				return err
			}
			res, err := st.ImportLegacy(ctx, legacy)
			for _, r := range res {
				switch {
				case r.Image != nil:
					fmt.Fprintf(w, "imported %s %s as %s %s\n", r.Key, r.Name, r.Image.ShortID(), strings.Join(r.Image.Names, ","))
				case r.Err != nil:
					failed++
					fmt.Fprintf(w, "FAILED   %s %s: %v\n", r.Key, r.Name, r.Err)
				default:
					fmt.Fprintf(w, "skipped  %s %s: %s\n", r.Key, r.Name, r.Skip)
				}
			}
			if err != nil {
				return fmt.Errorf("cannot import rkt 1.x's images: %w", err)
			}
		} else {
			for _, li := range legacy.Images {
				name := "(unreadable)"
				if li.Manifest != nil {
					name = li.Manifest.Name
				}
				fmt.Fprintf(w, "image    %s %s\n", li.Key, name)
			}
		}
	}
	running := 0
	for _, p := range pods {
		state := p.State
		if p.Running {
			state += ", running"
			running++
		}
		fmt.Fprintf(w, "pod      %s (%s) %s: left as it is\n", p.UUID, state, strings.Join(p.Apps, ", "))
	}
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d images of rkt 1.x not imported; nothing removed", failed)}
	}
	if !f.remove || f.dryRun {
		fmt.Fprintf(w, "rkt 1.x's data stays until `rkt migrate --remove-legacy` deletes it")
		if running > 0 {
			fmt.Fprintf(w, " (after its %d running pods are stopped)", running)
		}
		fmt.Fprintln(w)
		return nil
	}
	if err := stage0.RemoveLegacyPods(globals.Dir); err != nil {
		if errors.Is(err, stage0.ErrLegacyPodRunning) {
			return &exitError{code: 1, err: fmt.Errorf("nothing removed: %w", err)}
		}
		return err
	}
	if legacy != nil {
		if err := legacy.Remove(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "removed rkt 1.x's data from %s\n", globals.Dir)
	return nil
}

// recordedFailures reports the ACIs of l that the recorded import did not
// import (failed, or not seen): they keep --remove-legacy from deleting
// anything, as a failure of this run's import does.
func recordedFailures(w io.Writer, l *store.Legacy) int {
	n := 0
	for _, li := range l.Images {
		r, ok := l.Imported.Images[li.Key]
		switch {
		case !ok:
			n++
			fmt.Fprintf(w, "FAILED   %s: not imported yet (`rkt migrate` imports it)\n", li.Key)
		case strings.HasPrefix(r, "failed: "):
			n++
			fmt.Fprintf(w, "FAILED   %s: %s\n", li.Key, strings.TrimPrefix(r, "failed: "))
		}
	}
	return n
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
