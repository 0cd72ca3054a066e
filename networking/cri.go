package networking

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
)

// CRINetwork returns the name of the network CRI pods join: that of the
// first config file in ConfDir in lexical order, as containerd and the
// kubelet choose. When ConfDir holds none, it is the built-in default
// network: on the kubelet's pod CIDR once it gave one (SetDefaultSubnet),
// as containerd's conf_template would do, else on its own subnet, so that
// a fresh install networks pods with no hand-written config (as CRI-O's
// packaged bridge config does).
func CRINetwork(cfg Config) (string, error) {
	dir := cfg.confDir()
	files, err := confFiles(dir)
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return DefaultNetworkName, nil
	}
	list, err := readConfList(files[0])
	if err != nil {
		return "", err
	}
	// The name is given to Setup as PodNet.Net: it must name this one
	// network, not "host", "none" or a list.
	name := list["name"].(string)
	if names, err := parseNetList(name); err != nil || len(names) != 1 || names[0] != name || name == NetHost || name == NetNone {
		return "", fmt.Errorf("cannot use network config %q as the pod network: its name %q is reserved or not one network name", files[0], name)
	}
	return name, nil
}

// NetworkReady reports whether CRI pods can get a network and, when not, a
// message saying why: no config in ConfDir, an invalid one, or a plugin it
// names that is missing from PluginDirs.
func NetworkReady(cfg Config) (bool, string) { return cachedReady(cfg) }

// networkReady computes NetworkReady's answer and returns the plugins it
// found.
func networkReady(cfg Config) (bool, string, []string) {
	name, err := CRINetwork(cfg)
	if err != nil {
		return false, err.Error(), nil
	}
	data, _, err := networkConfList(cfg, name, false)
	if err != nil {
		return false, err.Error(), nil
	}
	types, err := pluginTypes(data)
	if err != nil {
		return false, err.Error(), nil
	}
	var found []string
	for _, t := range types {
		p, err := findPlugin(cfg, t)
		if err != nil {
			return false, fmt.Sprintf("network %q: %v", name, err), found
		}
		found = append(found, p)
	}
	return true, "", found
}

// findPlugin returns the path of the CNI plugin binary typ in PluginDirs.
// A type that is a path is refused, as libcni refuses to run it.
func findPlugin(cfg Config, typ string) (string, error) {
	if typ == "" || typ == "." || typ == ".." || strings.ContainsRune(typ, '/') {
		return "", fmt.Errorf("invalid CNI plugin type %q: not a file name", typ)
	}
	for _, d := range cfg.pluginDirs() {
		p := filepath.Join(d, typ)
		if path, err := exec.LookPath(p); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("CNI plugin %q not found in %v", typ, cfg.pluginDirs())
}

// DialInNetNS connects to address from inside the network namespace at
// netnsPath (for CRI PortForward: "tcp", "127.0.0.1:80"). The connection
// lives in that namespace; the caller's thread is left where it was.
func DialInNetNS(ctx context.Context, netnsPath, network, address string) (net.Conn, error) {
	var conn net.Conn
	err := InNetNS(netnsPath, func() error {
		var d net.Dialer
		var err error
		conn, err = d.DialContext(ctx, network, address)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cannot dial %s %s in network namespace %q: %w", network, address, netnsPath, err)
	}
	return conn, nil
}
