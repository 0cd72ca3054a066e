package store

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// mountinfoEscaper escapes a path as /proc/self/mountinfo shows it.
var mountinfoEscaper = strings.NewReplacer(" ", `\040`, "\t", `\011`, "\n", `\012`, `\`, `\134`)

// mountedTrees returns the trees (chain ID hex) that a mount of this mount
// namespace uses, e.g. as an overlay lowerdir of a running app: they must
// not be removed even when no image record refers to them any more.
func (s *Store) mountedTrees() (map[string]bool, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cannot read mount table: %w", err)
	}
	re, err := regexp.Compile(regexp.QuoteMeta(mountinfoEscaper.Replace(s.treePath(""))) + `([0-9a-f]{64})`)
	if err != nil {
		return nil, fmt.Errorf("cannot match tree paths: %w", err)
	}
	out := map[string]bool{}
	for _, m := range re.FindAllSubmatch(b, -1) {
		out[string(m[1])] = true
	}
	return out, nil
}
