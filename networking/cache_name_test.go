package networking

import (
	"regexp"
	"testing"
)

// TestParseCacheEntryName holds parseCacheEntryName to the pattern of
// libcni's entry names it replaces (a compiled regexp is heap in every
// rkt process).
func TestParseCacheEntryName(t *testing.T) {
	pat := regexp.MustCompile(`^(.+)-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-([^-]+)$`)
	const u = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	for _, s := range []string{"", "-", "net-" + u + "-eth0", "my-net-" + u + "-eth0", "n-" + u + "-", "-" + u + "-eth0",
		u + "-eth0", "net" + u + "-eth0", "net-" + u + "-eth-0", "net-0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0-eth0",
		"net-" + u[1:] + "-eth0", "a-b-" + u + "-" + u} {
		m := pat.FindStringSubmatch(s)
		network, id, ifName, ok := parseCacheEntryName(s)
		if ok != (m != nil) || ok && (network != m[1] || id != m[2] || ifName != m[3]) {
			t.Errorf("parseCacheEntryName(%q) = %q, %q, %q, %v; pattern: %q", s, network, id, ifName, ok, m)
		}
	}
}
