// Package networking gives pods their network: a network namespace
// bind-mounted in the pod directory and CNI networks attached to it with
// libcni. What Setup did is saved in the pod directory (net-info.json) so that
// Teardown can undo it even after a crash or a change of configuration.
//
// Networks: "host" (no namespace), "none" (namespace with loopback only),
// "default" (built in: host-local IPAM on Config.DefaultSubnet or the pod
// CIDR saved by SetDefaultSubnet, a bridge per subnet unless
// Config.DefaultBridge names one (rkt0 on DefaultSubnet), one MASQUERADE
// rule per subnet for outbound NAT), and named networks: the
// *.conflist, *.conf and *.json files of ConfDir, found by their "name"; a
// config named "default" replaces the built-in one. Interfaces are eth0,
// eth1... in the order given. Published ports apply to the first network:
// when its chain has no plugin with the portMappings capability, a portmap
// plugin (snat on, so 127.0.0.1:<hostPort> works) is appended to it.
// host-local plugins without a dataDir keep their reservations under
// <DataDir>/networks/ipam and libcni caches results under
// <DataDir>/networks/cache, never in /var/lib/cni.
package networking

import (
	"encoding/binary"
	"fmt"
	"net"
	"path/filepath"

	"github.com/rkt/rkt/pkg/buildinfo"
	"github.com/rkt/rkt/pkg/fileperm"
)

// Defaults of the built-in "default" network.
const (
	DefaultNetworkName = "default"        // name of the built-in bridge network
	DefaultBridge      = "rkt0"           // its Linux bridge on DefaultSubnet (other subnets: see Config.bridgeFor)
	DefaultSubnet      = "172.16.28.0/24" // its IPv4 subnet (host-local IPAM)
	CNIVersion         = "1.0.0"          // CNI spec version of the configs we generate
)

// Special values of PodNet.Net.
const (
	NetHost    = "host"    // share the host's network namespace
	NetNone    = "none"    // own network namespace with loopback only
	NetDefault = "default" // the built-in bridge network
)

// Config says where networks, plugins and state live.
type Config struct {
	DataDir       string   // rkt data dir; state goes under <DataDir>/networks
	ConfDir       string   // directory of named network configs; default buildinfo.CNIConfDir
	PluginDirs    []string // directories searched for CNI plugins; default buildinfo.PluginDirs()
	DefaultBridge string   // bridge of the "default" network; default one per subnet (DefaultBridge on DefaultSubnet)
	DefaultSubnet string   // subnet of the "default" network; default the saved pod CIDR, else DefaultSubnet
}

func (c Config) confDir() string {
	if c.ConfDir != "" {
		return c.ConfDir
	}
	return buildinfo.CNIConfDir
}

func (c Config) pluginDirs() []string {
	if len(c.PluginDirs) > 0 {
		return c.PluginDirs
	}
	return buildinfo.PluginDirs()
}

// bridgeFor returns the bridge of the default network on subnet:
// Config.DefaultBridge if set, else DefaultBridge on DefaultSubnet and one
// bridge per other subnet (rkt-<network address in hex>-<prefix length>,
// e.g. rkt-0a640000-24 for 10.100.0.0/24). A bridge keeps the gateway
// address of one subnet, so that pods on different subnets (CLI pods on
// DefaultSubnet, CRI pods on the kubelet's pod CIDR, the pods of an old
// and a new pod CIDR) never fight over one.
func (c Config) bridgeFor(subnet string) string {
	if c.DefaultBridge != "" {
		return c.DefaultBridge
	}
	_, ipnet, err := net.ParseCIDR(subnet)
	if err != nil || ipnet.IP.To4() == nil || ipnet.String() == DefaultSubnet {
		return DefaultBridge
	}
	ones, _ := ipnet.Mask.Size()
	return fmt.Sprintf("rkt-%08x-%d", binary.BigEndian.Uint32(ipnet.IP.To4()), ones)
}

// stateDir is <DataDir>/networks.
func (c Config) stateDir() string {
	dataDir := c.DataDir
	if dataDir == "" {
		dataDir = buildinfo.DataDir
	}
	return filepath.Join(dataDir, "networks")
}

// ensureStateDir creates the state dir, root's only (it holds IP
// reservations and CNI results of every pod).
func (c Config) ensureStateDir() error {
	if err := fileperm.MkdirAll(c.stateDir(), fileperm.Private); err != nil {
		return fmt.Errorf("cannot create the network state directory: %w", err)
	}
	return nil
}

// cacheDir holds libcni's result cache.
func (c Config) cacheDir() string { return filepath.Join(c.stateDir(), "cache") }

// ipamDir holds host-local's reservations.
func (c Config) ipamDir() string { return filepath.Join(c.stateDir(), "ipam") }
