package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// appArg is one image of `rkt run`/`rkt prepare` with the flags that
// followed it.
type appArg struct {
	image string
	flags *appFlags
	fs    *pflag.FlagSet
}

// parsePodArgs parses rkt's positional syntax:
//
//	[pod flags] IMAGE [app flags] [-- ARGS...] [--- IMAGE [app flags] ...]
//
// Pod flags (podFS) may appear anywhere; app flags apply to the image
// before them; "--" starts the app's arguments, "---" ends them.
func parsePodArgs(args []string, podFS *pflag.FlagSet) ([]*appArg, error) {
	var apps []*appArg
	cur := func() *appArg {
		if len(apps) == 0 {
			return nil
		}
		return apps[len(apps)-1]
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "---":
			continue
		case a == "--":
			app := cur()
			if app == nil {
				return nil, fmt.Errorf("\"--\" before any image")
			}
			for i++; i < len(args) && args[i] != "---"; i++ {
				app.flags.args = append(app.flags.args, args[i])
			}
		case strings.HasPrefix(a, "-") && a != "-":
			name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			var fs *pflag.FlagSet
			if app := cur(); app != nil && app.fs.Lookup(name) != nil {
				fs = app.fs
			} else if podFS.Lookup(name) != nil {
				fs = podFS
			} else if strings.HasPrefix(a, "--") || len(name) != 1 || podFS.ShorthandLookup(name) == nil {
				if app := cur(); app == nil && appFlagSet(&appFlags{}).Lookup(name) != nil {
					return nil, fmt.Errorf("flag --%s must follow the image it applies to", name)
				}
				return nil, fmt.Errorf("unknown flag %q", a)
			} else {
				fs = podFS
				name = podFS.ShorthandLookup(name).Name
			}
			f := fs.Lookup(name)
			if !hasValue {
				if f.NoOptDefVal != "" {
					value = f.NoOptDefVal
				} else {
					if i+1 >= len(args) {
						return nil, fmt.Errorf("flag --%s needs a value", name)
					}
					i++
					value = args[i]
				}
			}
			if err := fs.Set(name, value); err != nil {
				return nil, fmt.Errorf("invalid value %q for --%s: %w", value, name, err)
			}
		default:
			f := &appFlags{}
			apps = append(apps, &appArg{image: a, flags: f, fs: appFlagSet(f)})
		}
	}
	for _, app := range apps {
		app.flags.oomSet = app.fs.Changed("oom-score-adj")
	}
	return apps, nil
}
