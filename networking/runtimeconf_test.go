package networking

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rkt/rkt/pkg/schema"
)

// TestRuntimeConfig: DNS, ports and CNI_ARGS reach a plugin that declares
// the capabilities, on ADD and, from the saved state, on DEL.
func TestRuntimeConfig(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	pluginDir, out := t.TempDir(), t.TempDir()
	script := fmt.Sprintf(`#!/bin/sh
case "$CNI_COMMAND" in
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["1.0.0"]}'; exit 0 ;;
esac
cat > %[1]s/$CNI_COMMAND.stdin
echo "$CNI_ARGS" > %[1]s/$CNI_COMMAND.args
[ "$CNI_COMMAND" = ADD ] && echo '{"cniVersion":"1.0.0"}'
exit 0
`, out)
	if err := os.WriteFile(filepath.Join(pluginDir, "recorder"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.PluginDirs = append([]string{pluginDir}, cfg.pluginDirs()...)
	conf := `{"cniVersion":"1.0.0","name":"rec","plugins":[{"type":"recorder","capabilities":{"dns":true,"portMappings":true}}]}`
	if err := os.WriteFile(filepath.Join(cfg.ConfDir, "rec.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	pn := newPod(t, cfg, "rec")
	pn.DNS = &schema.DNS{Servers: []string{"10.0.0.10"}, Searches: []string{"svc.local"}}
	pn.Ports = []schema.PortMapping{{Protocol: "UDP", ContainerPort: 53, HostPort: 5353}}
	pn.Args = [][2]string{{"K8S_POD_NAME", "p"}}
	ctx := context.Background()
	if _, err := Setup(ctx, cfg, pn); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if err := os.Remove(filepath.Join(cfg.ConfDir, "rec.conflist")); err != nil {
		t.Fatal(err)
	}
	if err := Teardown(ctx, cfg, pn.Dir); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	for _, cmd := range []string{"ADD", "DEL"} {
		data, err := os.ReadFile(filepath.Join(out, cmd+".stdin"))
		if err != nil {
			t.Fatalf("%s never ran: %v", cmd, err)
		}
		var in struct {
			RuntimeConfig struct {
				DNS          schema.DNS       `json:"dns"`
				PortMappings []map[string]any `json:"portMappings"`
			} `json:"runtimeConfig"`
		}
		if err := json.Unmarshal(data, &in); err != nil {
			t.Fatal(err)
		}
		rc := in.RuntimeConfig
		if len(rc.DNS.Servers) != 1 || rc.DNS.Searches[0] != "svc.local" || len(rc.PortMappings) != 1 ||
			rc.PortMappings[0]["protocol"] != "udp" || rc.PortMappings[0]["hostPort"] != float64(5353) {
			t.Errorf("%s runtimeConfig: %s", cmd, data)
		}
		args, _ := os.ReadFile(filepath.Join(out, cmd+".args"))
		if !strings.Contains(string(args), "IgnoreUnknown=1") || !strings.Contains(string(args), "K8S_POD_NAME=p") {
			t.Errorf("%s CNI_ARGS = %q", cmd, args)
		}
	}
}
