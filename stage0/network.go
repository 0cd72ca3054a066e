package stage0

import (
	"context"
	"fmt"
	"net"

	"github.com/rkt/rkt/networking"
)

// NetConfig is the CNI configuration of a Runtime (Config.Net).
type NetConfig = networking.Config

// The network modes of PodOptions.Net besides network names.
const (
	NetHost    = networking.NetHost
	NetNone    = networking.NetNone
	NetDefault = networking.NetDefault
)

// NetworkReady reports whether pods can get a network, and why not.
func (r *Runtime) NetworkReady() (bool, string) { return networking.NetworkReady(r.cfg.Net) }

// PodNetwork is the network a pod gets when it names none (the CRI's):
// the first configured CNI network, else the built-in default.
func (r *Runtime) PodNetwork() (string, error) { return networking.CRINetwork(r.cfg.Net) }

// SetPodCIDR makes cidr the subnet of the built-in default network.
func (r *Runtime) SetPodCIDR(cidr string) error { return networking.SetDefaultSubnet(r.cfg.Net, cidr) }

// DialPod connects to address (host:port) as seen from inside the pod's
// network: its network namespace, or the host's for a host-network pod.
func (r *Runtime) DialPod(ctx context.Context, uuid, network, address string) (net.Conn, error) {
	p, err := r.findPod(uuid)
	if err != nil {
		return nil, err
	}
	pm, err := p.readManifest()
	if err != nil {
		return nil, err
	}
	if pm.Net == NetHost {
		var d net.Dialer
		return d.DialContext(ctx, network, address)
	}
	netns, release, err := podNetNS(p)
	if err != nil {
		return nil, fmt.Errorf("cannot reach %s in pod %s: %w", address, uuid, err)
	}
	defer release()
	conn, err := networking.DialInNetNS(ctx, netns, network, address)
	if err != nil {
		return nil, fmt.Errorf("cannot reach %s in pod %s: %w", address, uuid, err)
	}
	return conn, nil
}

// podNetNS returns a path to the network namespace of p, a pod with one of
// its own (not on the host's network), valid until release is called. A
// service restarted in another mount namespace than the pod's supervisor
// sees an empty file at <pod>/netns: it reaches the namespace through the
// supervisor's mount namespace.
func podNetNS(p *pod) (path string, release func(), err error) {
	netns := p.layout().NetNS()
	mns, err := podMountNS(p)
	if err != nil {
		return "", nil, err
	}
	defer mns.Close()
	if mns == nil {
		return netns, func() {}, nil
	}
	f, err := mns.open(netns)
	if err != nil {
		return "", nil, fmt.Errorf("cannot open the network namespace of pod %s: %w", p.uuid, err)
	}
	return fmt.Sprintf("/proc/self/fd/%d", f.Fd()), func() { f.Close() }, nil
}
