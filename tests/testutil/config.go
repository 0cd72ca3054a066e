package testutil

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// MirrorEndpoint is one mirror of a registry in a registryMirror file.
type MirrorEndpoint struct {
	Endpoint string `json:"endpoint"` // host[:port]
	Insecure bool   `json:"insecure,omitempty"`
}

// WriteMirrorConfig writes <dir>/registries.d/mirror-<registry>.json making
// registry resolve through mirrors, tried in order. dir is a config dir
// such as Env.LocalConfig.
func WriteMirrorConfig(t testing.TB, dir, registry string, mirrors ...MirrorEndpoint) string {
	t.Helper()
	return writeConfigFile(t, filepath.Join(dir, "registries.d"), "mirror-"+fileSafe(registry)+".json", map[string]any{
		"rktKind": "registryMirror", "rktVersion": "v1", "registry": registry, "mirrors": mirrors,
	})
}

// WriteMirrorOnlyConfig is WriteMirrorConfig with "upstream": false: the
// registry itself is never contacted (with no mirrors, it is blocked).
func WriteMirrorOnlyConfig(t testing.TB, dir, registry string, mirrors ...MirrorEndpoint) string {
	t.Helper()
	if mirrors == nil {
		mirrors = []MirrorEndpoint{}
	}
	return writeConfigFile(t, filepath.Join(dir, "registries.d"), "mirror-"+fileSafe(registry)+".json", map[string]any{
		"rktKind": "registryMirror", "rktVersion": "v1", "registry": registry, "mirrors": mirrors, "upstream": false,
	})
}

// WriteAuthConfig writes <dir>/auth.d/auth-<first registry>.json with
// credentials for the registries (rkt's dockerAuth kind).
func WriteAuthConfig(t testing.TB, dir string, registries []string, user, password string) string {
	t.Helper()
	return writeConfigFile(t, filepath.Join(dir, "auth.d"), "auth-"+fileSafe(registries[0])+".json", map[string]any{
		"rktKind": "dockerAuth", "rktVersion": "v1", "registries": registries,
		"credentials": map[string]string{"user": user, "password": password},
	})
}

func writeConfigFile(t testing.TB, dir, name string, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("cannot create %s: %v", dir, err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatalf("cannot write %s: %v", p, err)
	}
	return p
}

func fileSafe(s string) string {
	return strings.NewReplacer("/", "_", ":", "_").Replace(s)
}
