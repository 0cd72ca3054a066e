package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/rkt/rkt/pkg/confdir"
	"github.com/rkt/rkt/pkg/rkt1conf"
	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/store"
)

// legacyNotice says on w what rkt 1.x left in --dir that this rkt does not
// show: pods (pods) and images not imported yet (images).
func legacyNotice(w io.Writer, pods, images bool) {
	if images {
		if present, imported := store.LegacyState(globals.Dir); present && !imported {
			fmt.Fprintf(w, "rkt: rkt 1.x's images in %s are not in this rkt's store: `rkt migrate` imports them (see rkt migrate --help)\n", globals.Dir)
		}
	}
	if pods {
		if lp, err := stage0.LegacyPods(globals.Dir); err == nil && len(lp) > 0 {
			fmt.Fprintf(w, "rkt: %d pods of rkt 1.x in %s are not listed, run or collected by this rkt: `rkt migrate` lists them and says how to remove them\n", len(lp), globals.Dir)
		}
	}
}

// logLegacy logs at the service's start what rkt 1.x left that it does
// not use.
func logLegacy(logger *slog.Logger) {
	for _, n := range rkt1conf.Unused(globals.SystemConfig, globals.LocalConfig) {
		logger.Warn("configuration of rkt 1.x not used", "notice", n)
	}
	for _, n := range configWritable() {
		logger.Warn("configuration writable by users other than root: they can set the data directory (paths.d), registries and credentials, networks", "notice", n)
	}
	present, imported := store.LegacyState(globals.Dir)
	pods, _ := stage0.LegacyPods(globals.Dir)
	if (present && !imported) || len(pods) > 0 {
		logger.Warn("data of rkt 1.x found: its pods are not served and its images not imported until `rkt migrate` runs (see Documentation/upgrading.md)",
			"dir", globals.Dir, "pods", len(pods), "imagesImported", imported)
	}
}

// configWritable names what of the configuration directories users other
// than root may change (rkt 1.x made /etc/rkt 2775 root:rkt-admin).
func configWritable() []string {
	var out []string
	for _, d := range []string{globals.SystemConfig, globals.LocalConfig} {
		out = append(out, confdir.WritableByOthers(d)...)
	}
	return out
}
