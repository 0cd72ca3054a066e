package main

import (
	"strconv"
	"unicode"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage0"
)

// displayName is the NAME column of a pod or app: its display-name
// annotation (e.g. the Kubernetes namespace/name the kubelet-service gives
// it), "-" when it has none.
func displayName(annos map[string]string) string {
	if n := annos[schema.AnnotationDisplayName]; n != "" {
		return printable(n)
	}
	return "-"
}

// printable quotes a name holding a control character (a CRI client's
// metadata is not checked as the kubelet's DNS names are), so that none
// reaches the terminal.
func printable(s string) string {
	for _, r := range s {
		if unicode.IsControl(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// podDisplayName is displayName of a pod ("-" while it has no manifest).
func podDisplayName(p *stage0.PodStatus) string {
	if p.Manifest == nil {
		return "-"
	}
	return displayName(p.Manifest.Annotations)
}
