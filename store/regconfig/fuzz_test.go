package regconfig

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad loads arbitrary auth.d and registries.d files: Load may refuse
// them but must not panic, and what it accepts is keyed by normalized,
// non-empty registry names with host[:port] mirror endpoints.
func FuzzLoad(f *testing.F) {
	auth := `{"rktKind":"dockerAuth","rktVersion":"v1","registries":["quay.io","index.docker.io"],"credentials":{"user":"u","password":"p"}}`
	mirror := `{"rktKind":"registryMirror","rktVersion":"v1","registry":"docker.io","mirrors":[{"endpoint":"127.0.0.1:5000","insecure":true}]}`
	f.Add([]byte(auth), []byte(mirror))
	f.Add([]byte(`{"rktKind":"auth","rktVersion":"v1"}`), []byte(auth))
	f.Add([]byte(`{"rktKind":"registryMirror","rktVersion":"v1","registry":"","mirrors":[{"endpoint":"a/b"}]}`), []byte(`{}`))
	f.Add([]byte(`{"rktKind":"dockerAuth","rktVersion":"v1","registries":[""]}`), []byte(`[`))
	f.Add([]byte(`{"rktKind":"dockerAuth","rktVersion":"v1","registries":["HTTPS://Quay.io/"]}`), []byte(mirror))
	f.Fuzz(func(t *testing.T, a, r []byte) {
		dir := t.TempDir()
		for sub, b := range map[string][]byte{AuthDir: a, RegistriesDir: r} {
			if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, sub, "f.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		c, err := Load(dir)
		if err != nil {
			return
		}
		for k := range c.Auth {
			if k == "" || NormalizeRegistry(k) != k {
				t.Fatalf("credentials keyed by %q", k)
			}
		}
		for k, ms := range c.Mirrors {
			if k == "" || NormalizeRegistry(k) != k || len(ms) == 0 {
				t.Fatalf("mirrors keyed by %q: %v", k, ms)
			}
			for _, m := range ms {
				if err := checkEndpoint(m.Endpoint); err != nil {
					t.Fatalf("mirror of %q accepted: %v", k, err)
				}
			}
		}
	})
}

// FuzzNormalizeRegistry: normalizing a normalized name changes nothing.
func FuzzNormalizeRegistry(f *testing.F) {
	for _, s := range []string{"HTTPS://Quay.io/", "http://https://x", "index.docker.io", "https:///", "a//"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n := NormalizeRegistry(s); NormalizeRegistry(n) != n {
			t.Fatalf("NormalizeRegistry(%q) = %q, which normalizes to %q", s, n, NormalizeRegistry(n))
		}
	})
}
