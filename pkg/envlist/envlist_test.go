package envlist

import (
	"slices"
	"testing"
)

func TestMerge(t *testing.T) {
	tests := []struct {
		base, over, want []string
	}{
		{[]string{"PATH=/bin", "A=1"}, []string{"A=2", "B=3"}, []string{"PATH=/bin", "A=2", "B=3"}},
		{nil, []string{"A=1", "A=2"}, []string{"A=2"}},
		{[]string{"A=1"}, nil, []string{"A=1"}},
		{[]string{"A=x=y"}, []string{"A=", "B"}, []string{"A=", "B"}},
	}
	for _, tc := range tests {
		base := slices.Clone(tc.base)
		if got := Merge(tc.base, tc.over); !slices.Equal(got, tc.want) {
			t.Errorf("Merge(%q, %q) = %q, want %q", tc.base, tc.over, got, tc.want)
		}
		if !slices.Equal(base, tc.base) {
			t.Errorf("Merge modified its base: %q", tc.base)
		}
	}
}

func TestHas(t *testing.T) {
	env := []string{"PATH=/bin", "HOME="}
	for key, want := range map[string]bool{"PATH": true, "HOME": true, "PAT": false, "TERM": false} {
		if got := Has(env, key); got != want {
			t.Errorf("Has(%q) = %v, want %v", key, got, want)
		}
	}
}
