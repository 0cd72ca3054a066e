package tests

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rkt/rkt/tests/testutil"
)

// TestFetchAuth covers registry credentials: none, --creds, rkt's
// dockerAuth config (with system < local < user precedence) and the
// user's docker config.json, against basic and bearer-token registries.
func TestFetchAuth(t *testing.T) {
	for _, mode := range []struct {
		name string
		opt  testutil.RegistryOption
	}{
		{"basic", testutil.WithBasicAuth("alice", "s3cret")},
		{"token", testutil.WithTokenAuth("alice", "s3cret")},
	} {
		t.Run(mode.name, func(t *testing.T) {
			reg := testutil.StartRegistry(t, mode.opt)
			ref, id := testutil.PushBusybox(t, reg, "private/busybox:1")

			t.Run("anonymous-refused", func(t *testing.T) {
				env := testutil.NewEnv(t)
				r := env.RunFail("fetch", "--no-progress", ref)
				if !strings.Contains(strings.ToLower(r.Stderr), "unauthorized") && !strings.Contains(r.Stderr, "401") {
					t.Errorf("error does not say unauthorized: %s", r.Stderr)
				}
				if len(env.ListImages()) != 0 {
					t.Errorf("refused fetch stored an image")
				}
			})
			t.Run("creds", func(t *testing.T) {
				env := testutil.NewEnv(t)
				if got := env.Fetch(ref, "--creds=alice:s3cret"); got != id {
					t.Errorf("fetch printed %s, want %s", got, id)
				}
				r := env.RunFail("fetch", "--no-progress", "--pull-policy=update", "--creds=alice:wrong", ref)
				if strings.Contains(r.Stderr, "wrong") {
					t.Errorf("error output leaks the password: %s", r.Stderr)
				}
				env.RunFail("fetch", "--no-progress", "--creds=nocolon", ref)
			})
			t.Run("dockerAuth-config", func(t *testing.T) {
				env := testutil.NewEnv(t)
				testutil.WriteAuthConfig(t, env.SystemConfig, []string{reg.Addr}, "alice", "wrong")
				env.RunFail("fetch", "--no-progress", ref)
				// The local config overrides the system config.
				testutil.WriteAuthConfig(t, env.LocalConfig, []string{reg.Addr}, "alice", "s3cret")
				if got := env.Fetch(ref); got != id {
					t.Errorf("fetch printed %s, want %s", got, id)
				}
				// And the user config overrides both.
				testutil.WriteAuthConfig(t, env.UserConfig, []string{reg.Addr}, "alice", "wrong-again")
				env.RunFail("fetch", "--no-progress", "--pull-policy=update", ref)
			})
			t.Run("docker-config-json", func(t *testing.T) {
				env := testutil.NewEnv(t)
				dir := filepath.Join(env.Root, "docker")
				os.MkdirAll(dir, 0o700)
				b, _ := json.Marshal(map[string]any{"auths": map[string]any{
					reg.Addr: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte("alice:s3cret"))},
				}})
				if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
					t.Fatal(err)
				}
				env.ExtraEnv = append(env.ExtraEnv, "DOCKER_CONFIG="+dir)
				if got := env.Fetch(ref); got != id {
					t.Errorf("fetch printed %s, want %s", got, id)
				}
			})
		})
	}
}
