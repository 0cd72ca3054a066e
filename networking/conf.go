package networking

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/containernetworking/cni/libcni"

	"github.com/rkt/rkt/pkg/confdir"
)

// confExtensions are the file names of network configs in ConfDir.
var confExtensions = []string{".conflist", ".conf", ".json"}

// ErrNetworkNotFound is returned (wrapped) when no config in ConfDir has the
// requested network name.
var ErrNetworkNotFound = errors.New("network not found")

// confFiles lists the config files of dir in lexical order (as containerd
// and the kubelet pick them). A missing dir has no configs.
func confFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot list network configs in %q: %w", dir, err)
	}
	var files []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		for _, ext := range confExtensions {
			if filepath.Ext(e.Name()) == ext {
				files = append(files, filepath.Join(dir, e.Name()))
				break
			}
		}
	}
	sort.Strings(files)
	return files, nil
}

// readConfList reads a config file as a conflist: a single plugin config
// (.conf) is wrapped into a list of one.
func readConfList(file string) (map[string]interface{}, error) {
	data, err := confdir.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("cannot read network config: %w", err)
	}
	raw := map[string]interface{}{}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("cannot parse network config %q: %w", file, err)
	}
	if _, ok := raw["name"].(string); !ok {
		return nil, fmt.Errorf("network config %q has no name", file)
	}
	if _, ok := raw["plugins"]; ok {
		return raw, nil
	}
	if _, ok := raw["type"].(string); !ok {
		return nil, fmt.Errorf("network config %q has neither plugins nor type", file)
	}
	list := map[string]interface{}{
		"name":    raw["name"],
		"plugins": []interface{}{raw},
	}
	if v, ok := raw["cniVersion"]; ok {
		list["cniVersion"] = v
	}
	return list, nil
}

// findNamedNetwork returns the conflist named name in dir.
func findNamedNetwork(dir, name string) (map[string]interface{}, error) {
	files, err := confFiles(dir)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		list, err := readConfList(f)
		if err != nil {
			return nil, err
		}
		if list["name"] == name {
			return list, nil
		}
	}
	return nil, fmt.Errorf("no config for network %q in %q: %w", name, dir, ErrNetworkNotFound)
}

// defaultConfList is the built-in "default" network: a bridge with host-local
// IPAM (outbound NAT is one rule per subnet, see masquerade.go).
func defaultConfList(cfg Config) (map[string]interface{}, error) {
	subnet, err := cfg.subnet()
	if err != nil {
		return nil, err
	}
	plugins := []interface{}{
		map[string]interface{}{
			"type":        "bridge",
			"bridge":      cfg.bridgeFor(subnet),
			"isGateway":   true,
			"ipMasq":      false, // see masquerade.go
			"hairpinMode": true,
			"ipam": map[string]interface{}{
				"type":   "host-local",
				"ranges": []interface{}{[]interface{}{map[string]interface{}{"subnet": subnet}}},
				"routes": []interface{}{map[string]interface{}{"dst": "0.0.0.0/0"}},
			},
		},
	}
	list := map[string]interface{}{
		"cniVersion": CNIVersion,
		"name":       DefaultNetworkName,
		"plugins":    plugins,
	}
	return list, nil
}

// portmapPlugin is the plugin appended to a chain that must publish ports.
func portmapPlugin() map[string]interface{} {
	return map[string]interface{}{
		"type":         "portmap",
		"capabilities": map[string]interface{}{"portMappings": true},
		"snat":         true,
	}
}

// addPortmap appends portmap to the list unless one of its plugins already
// handles the portMappings capability.
func addPortmap(list map[string]interface{}) {
	plugins, _ := list["plugins"].([]interface{})
	for _, p := range plugins {
		pm, _ := p.(map[string]interface{})
		caps, _ := pm["capabilities"].(map[string]interface{})
		if on, _ := caps["portMappings"].(bool); on {
			return
		}
	}
	list["plugins"] = append(plugins, portmapPlugin())
}

// injectIPAMDataDir makes host-local plugins of the list keep their
// reservations under our state dir unless the config chose a dataDir.
func injectIPAMDataDir(list map[string]interface{}, dir string) {
	plugins, _ := list["plugins"].([]interface{})
	for _, p := range plugins {
		pm, _ := p.(map[string]interface{})
		ipam, _ := pm["ipam"].(map[string]interface{})
		if ipam == nil || ipam["type"] != "host-local" {
			continue
		}
		if _, ok := ipam["dataDir"]; !ok {
			ipam["dataDir"] = dir
		}
	}
}

// networkConfList builds the conflist bytes for the network name: a config
// named so in ConfDir or, for "default" without such a config, the built-in
// default network (builtin is then true).
func networkConfList(cfg Config, name string, withPorts bool) (data []byte, builtin bool, err error) {
	list, err := findNamedNetwork(cfg.confDir(), name)
	if errors.Is(err, ErrNetworkNotFound) && name == DefaultNetworkName {
		builtin = true
		list, err = defaultConfList(cfg)
	}
	if err != nil {
		return nil, false, err
	}
	if withPorts {
		addPortmap(list)
	}
	injectIPAMDataDir(list, cfg.ipamDir())
	data, err = json.Marshal(list)
	if err != nil {
		return nil, false, fmt.Errorf("cannot encode config of network %q: %w", name, err)
	}
	if _, err := libcni.ConfListFromBytes(data); err != nil {
		return nil, false, fmt.Errorf("invalid config of network %q: %w", name, err)
	}
	return data, builtin, nil
}

// parseNetList splits PodNet.Net into network names ("" means default) and
// checks that host and none stand alone and that no name repeats.
func parseNetList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return []string{DefaultNetworkName}, nil
	}
	var names []string
	seen := map[string]bool{}
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			return nil, fmt.Errorf("invalid network list %q: empty name", s)
		}
		if seen[n] {
			return nil, fmt.Errorf("invalid network list %q: %q given twice", s, n)
		}
		seen[n] = true
		names = append(names, n)
	}
	if len(names) > 1 && (seen[NetHost] || seen[NetNone]) {
		return nil, fmt.Errorf("invalid network list %q: %q and %q cannot be combined with other networks", s, NetHost, NetNone)
	}
	return names, nil
}

// pluginTypes returns the plugin types a conflist runs, IPAM plugins included.
func pluginTypes(confList []byte) ([]string, error) {
	list, err := libcni.ConfListFromBytes(confList)
	if err != nil {
		return nil, err
	}
	var types []string
	for _, p := range list.Plugins {
		types = append(types, p.Network.Type)
		if p.Network.IPAM.Type != "" {
			types = append(types, p.Network.IPAM.Type)
		}
	}
	return types, nil
}
