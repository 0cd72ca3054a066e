package networking

import (
	"encoding/json"
	"net"

	"github.com/rkt/rkt/pkg/schema"
)

// PodNet is the network a pod asks for.
type PodNet struct {
	UUID  string               // pod UUID; the CNI container ID
	Dir   string               // absolute pod directory
	Net   string               // "default", "none", "host" or a comma-separated list of network names
	Ports []schema.PortMapping // published ports, applied to the first network
	DNS   *schema.DNS          // passed to plugins that declare the "dns" capability
	// Args are extra CNI_ARGS, e.g. K8S_POD_NAMESPACE and K8S_POD_NAME for
	// the CRI; IgnoreUnknown=1 is added so plugins not knowing them go on.
	Args [][2]string
	// CreateNetNS, when set, creates the pod's network namespace (with
	// loopback up) bind-mounted at path instead of Setup: stage0 makes it
	// inside the pod's user namespace. Teardown unmounts it as any other.
	CreateNetNS func(path string) error `json:"-"`
}

// Result is what Setup did, as saved in <pod dir>/net-info.json.
type Result struct {
	UUID     string               `json:"uuid"`            // pod UUID, the CNI container ID
	Net      string               `json:"net"`             // the requested networks, as in PodNet.Net
	NetNS    string               `json:"netns,omitempty"` // the bind-mounted network namespace; empty for host
	Ports    []schema.PortMapping `json:"ports,omitempty"` // published ports
	Networks []NetworkResult      `json:"networks,omitempty"`
	Complete bool                 `json:"complete"` // false while Setup runs or when it was interrupted

	// Masquerade is the subnet whose outbound NAT rule the pod uses (the
	// built-in default network); the last pod to leave removes the rule.
	Masquerade string `json:"masquerade,omitempty"`

	// TeardownStarted is set before the first CNI DEL: a Teardown that finds
	// it set again retries after a failed or killed one.
	TeardownStarted bool `json:"teardownStarted,omitempty"`
}

// NetworkResult is one CNI network attached to the pod.
type NetworkResult struct {
	Name   string     `json:"name"`             // network name
	IfName string     `json:"ifName"`           // interface inside the pod
	IPs    []IPConfig `json:"ips,omitempty"`    // addresses of the pod on this network
	Routes []Route    `json:"routes,omitempty"` // routes the plugin installed
	DNS    schema.DNS `json:"dns,omitempty"`    // DNS the plugin returned
	Added  bool       `json:"added"`            // CNI ADD succeeded

	// What CNI DEL needs, independent of the config files.
	ConfList       json.RawMessage        `json:"confList"`
	CapabilityArgs map[string]interface{} `json:"capabilityArgs,omitempty"`
	Args           [][2]string            `json:"args,omitempty"`
}

// IPConfig is one address of the pod.
type IPConfig struct {
	Address string `json:"address"`           // CIDR notation, e.g. 172.16.28.2/24
	Gateway string `json:"gateway,omitempty"` // e.g. 172.16.28.1
}

// Route is a route inside the pod.
type Route struct {
	Dst string `json:"dst"`          // CIDR
	GW  string `json:"gw,omitempty"` // next hop; empty means the interface's gateway
}

// IP returns the address without its prefix length.
func (c IPConfig) IP() net.IP {
	ip, _, err := net.ParseCIDR(c.Address)
	if err != nil {
		return net.ParseIP(c.Address)
	}
	return ip
}

// PodIPs returns the pod's addresses over all networks, IPv4 ones first (the
// CRI reports the first as the pod IP).
func (r *Result) PodIPs() []string {
	if r == nil {
		return nil
	}
	var v4, v6 []string
	for _, n := range r.Networks {
		for _, c := range n.IPs {
			ip := c.IP()
			switch {
			case ip == nil:
			case ip.To4() != nil:
				v4 = append(v4, ip.String())
			default:
				v6 = append(v6, ip.String())
			}
		}
	}
	return append(v4, v6...)
}

// DNS merges the DNS settings every network returned, first network first,
// without duplicates.
func (r *Result) DNS() schema.DNS {
	var d schema.DNS
	if r == nil {
		return d
	}
	for _, n := range r.Networks {
		d.Servers = appendUnique(d.Servers, n.DNS.Servers...)
		d.Searches = appendUnique(d.Searches, n.DNS.Searches...)
		d.Options = appendUnique(d.Options, n.DNS.Options...)
	}
	return d
}

func appendUnique(list []string, items ...string) []string {
	for _, it := range items {
		found := false
		for _, l := range list {
			if l == it {
				found = true
				break
			}
		}
		if !found {
			list = append(list, it)
		}
	}
	return list
}
