package stage0

import (
	"regexp"
	"strings"
	"testing"
)

// TestNameChecks holds validAppName to the pattern it replaces.
func TestNameChecks(t *testing.T) {
	appPat := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,252}$`)
	inputs := []string{"", "a", "A", "0", "_a", "-a", ".a", "a_b.c-d", "a b", "a/b", "é", "a\n", "app\x00",
		strings.Repeat("a", 253), strings.Repeat("a", 254), "x" + strings.Repeat("-", 252),
		"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0",
		"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f00", "0f1e2d3c04b5a-6978-8796-a5b4c3d2e1f0",
		"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1fg", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n"}
	for _, s := range inputs {
		if got, want := validAppName(s), appPat.MatchString(s); got != want {
			t.Errorf("validAppName(%q) = %v, want %v", s, got, want)
		}
	}
}
