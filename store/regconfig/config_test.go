package regconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConf(t *testing.T, dir, sub, name, body string) {
	t.Helper()
	p := filepath.Join(dir, sub)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, name), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoadMergesDirectories(t *testing.T) {
	system, local, user := t.TempDir(), t.TempDir(), t.TempDir()
	writeConf(t, system, RegistriesDir, "k8s.json", `{"rktKind":"registryMirror","rktVersion":"v1","registry":"registry.k8s.io","mirrors":[{"endpoint":"mirror.example:5000"}]}`)
	writeConf(t, system, RegistriesDir, "hub.json", `{"rktKind":"registryMirror","rktVersion":"v1","registry":"docker.io","mirrors":[{"endpoint":"hub-mirror.example"}]}`)
	writeConf(t, local, RegistriesDir, "k8s.json", `{"rktKind":"registryMirror","rktVersion":"v1","registry":"registry.k8s.io","mirrors":[{"endpoint":"127.0.0.1:5000","insecure":true},{"endpoint":"10.0.0.2:5000"}]}`)
	writeConf(t, local, AuthDir, "quay.json", `{"rktKind":"dockerAuth","rktVersion":"v1","registries":["quay.io","index.docker.io"],"credentials":{"user":"bob","password":"s3cret"}}`)
	writeConf(t, user, AuthDir, "quay.json", `{"rktKind":"dockerAuth","rktVersion":"v1","registries":["quay.io"],"credentials":{"user":"alice","password":"pw"}}`)
	writeConf(t, user, AuthDir, "basic.json", `{"rktKind":"auth","rktVersion":"v1","domains":["example.com"],"type":"basic","credentials":{"user":"x","password":"y"}}`)
	writeConf(t, user, AuthDir, "README", `not json, ignored`)

	c, err := Load(system, local, "", user, filepath.Join(t.TempDir(), "missing"))
	if err != nil {
		t.Fatal(err)
	}
	m := c.MirrorsFor("registry.k8s.io")
	if len(m) != 2 || m[0].Endpoint != "127.0.0.1:5000" || !m[0].Insecure || m[1].Insecure {
		t.Errorf("registry.k8s.io mirrors = %+v, want local's two (later dir wins)", m)
	}
	if m := c.MirrorsFor("index.docker.io"); len(m) != 1 || m[0].Endpoint != "hub-mirror.example" {
		t.Errorf("docker hub mirrors by alias = %+v", m)
	}
	if cr, ok := c.AuthFor("quay.io"); !ok || cr.User != "alice" {
		t.Errorf("quay.io auth = %+v, %v; want user's alice", cr, ok)
	}
	if cr, ok := c.AuthFor("docker.io"); !ok || cr.User != "bob" {
		t.Errorf("docker.io auth = %+v, %v", cr, ok)
	}
	if _, ok := c.AuthFor("gcr.io"); ok {
		t.Error("credentials for an unconfigured registry")
	}
	var nilCfg *Config
	if nilCfg.MirrorsFor("x") != nil {
		t.Error("nil config has mirrors")
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"bad json", map[string]string{"a.json": `{`}, "cannot parse"},
		{"unknown kind", map[string]string{"a.json": `{"rktKind":"nope","rktVersion":"v1"}`}, "unknown rktKind"},
		{"bad version", map[string]string{"a.json": `{"rktKind":"registryMirror","rktVersion":"v9"}`}, "unsupported rktVersion"},
		{"mirror url", map[string]string{"a.json": `{"rktKind":"registryMirror","rktVersion":"v1","registry":"r","mirrors":[{"endpoint":"http://m"}]}`}, "host[:port]"},
		{"no mirrors", map[string]string{"a.json": `{"rktKind":"registryMirror","rktVersion":"v1","registry":"r","mirrors":[]}`}, "at least one mirror"},
		{"duplicate", map[string]string{
			"a.json": `{"rktKind":"registryMirror","rktVersion":"v1","registry":"r","mirrors":[{"endpoint":"m"}]}`,
			"b.json": `{"rktKind":"registryMirror","rktVersion":"v1","registry":"r","mirrors":[{"endpoint":"n"}]}`}, "defined twice"},
		{"duplicate auth", map[string]string{
			"a.json": `{"rktKind":"dockerAuth","rktVersion":"v1","registries":["docker.io"],"credentials":{"user":"a"}}`,
			"b.json": `{"rktKind":"dockerAuth","rktVersion":"v1","registries":["registry-1.docker.io"],"credentials":{"user":"b"}}`}, "defined twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for n, b := range tc.files {
				writeConf(t, dir, RegistriesDir, n, b)
			}
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestUpstream: "upstream": false keeps a registry from being contacted
// (mirrors only; with none, blocked); a later directory's file about the
// same registry overrides it whole.
func TestUpstream(t *testing.T) {
	system, local := t.TempDir(), t.TempDir()
	writeConf(t, system, RegistriesDir, "k8s.json", `{"rktKind":"registryMirror","rktVersion":"v1","registry":"registry.k8s.io","mirrors":[{"endpoint":"127.0.0.1:5000"}],"upstream":false}`)
	writeConf(t, system, RegistriesDir, "blocked.json", `{"rktKind":"registryMirror","rktVersion":"v1","registry":"invalid.example","mirrors":[],"upstream":false}`)
	writeConf(t, system, RegistriesDir, "hub.json", `{"rktKind":"registryMirror","rktVersion":"v1","registry":"docker.io","mirrors":[{"endpoint":"m"}],"upstream":false}`)
	writeConf(t, local, RegistriesDir, "hub.json", `{"rktKind":"registryMirror","rktVersion":"v1","registry":"docker.io","mirrors":[{"endpoint":"n"}]}`)
	writeConf(t, local, RegistriesDir, "quay.json", `{"rktKind":"registryMirror","rktVersion":"v1","registry":"quay.io","mirrors":[{"endpoint":"q"}],"upstream":true}`)
	c, err := Load(system, local)
	if err != nil {
		t.Fatal(err)
	}
	for reg, want := range map[string]bool{
		"registry.k8s.io": false, "REGISTRY.K8S.IO": false, "invalid.example": false,
		"docker.io": true, // local's file overrides system's
		"quay.io":   true, "gcr.io": true,
	} {
		if got := c.UpstreamAllowed(reg); got != want {
			t.Errorf("UpstreamAllowed(%s) = %v, want %v", reg, got, want)
		}
	}
	if m := c.MirrorsFor("invalid.example"); len(m) != 0 {
		t.Errorf("a blocked registry has mirrors %v", m)
	}
	var nilCfg *Config
	if !nilCfg.UpstreamAllowed("x") {
		t.Error("no configuration keeps a registry from being contacted")
	}
}
