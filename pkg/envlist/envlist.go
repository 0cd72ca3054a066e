// Package envlist handles process environments as KEY=VALUE lists.
package envlist

import "strings"

// Merge returns base with every KEY=VALUE of over replacing the entry of
// the same key in place, or appended when base has none.
func Merge(base, over []string) []string {
	out := append([]string{}, base...)
	idx := map[string]int{}
	for i, kv := range out {
		k, _, _ := strings.Cut(kv, "=")
		idx[k] = i
	}
	for _, kv := range over {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// Has reports whether env sets key.
func Has(env []string, key string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			return true
		}
	}
	return false
}
