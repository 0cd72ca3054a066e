package networking

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// gatewayOf returns the gateway address of subnet on the default network's
// bridge: its first address, as host-local picks it (e.g. 10.1.2.1/24).
func gatewayOf(subnet string) (*net.IPNet, error) {
	_, ipnet, err := net.ParseCIDR(subnet)
	if err != nil || ipnet.IP.To4() == nil {
		return nil, fmt.Errorf("invalid subnet %q: not an IPv4 CIDR", subnet)
	}
	gw := make(net.IP, 4)
	binary.BigEndian.PutUint32(gw, binary.BigEndian.Uint32(ipnet.IP.To4())+1)
	return &net.IPNet{IP: gw, Mask: ipnet.Mask}, nil
}

// fitBridge makes an existing bridge usable by the default network on
// subnet before a pod is added to it: the bridge plugin refuses a bridge
// whose IPv4 address is not the subnet's gateway ("already has an IP address
// different from ..."), which a bridge keeps after the pods of an earlier
// subnet are gone (a changed pod CIDR, --default-subnet, an older rkt that
// named every default bridge rkt0). Such a bridge with no interface left
// on it is deleted (the plugin creates it again with the right address);
// one still used by pods is an error, since moving it would cut them off.
// The caller holds the network state lock.
func fitBridge(ctx context.Context, bridge, subnet string) error {
	ifc, err := net.InterfaceByName(bridge)
	for try := 0; err != nil; try++ {
		if _, serr := os.Stat(filepath.Join("/sys/class/net", bridge)); errors.Is(serr, os.ErrNotExist) {
			return nil // the plugin creates it
		}
		if try == 3 {
			return fmt.Errorf("cannot inspect bridge %q: %w", bridge, err)
		}
		// it exists: InterfaceByName lists every link, and a listing
		// interrupted by other pods' veths coming and going can miss it
		ifc, err = net.InterfaceByName(bridge)
	}
	gw, err := gatewayOf(subnet)
	if err != nil {
		return err
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return fmt.Errorf("cannot read the addresses of bridge %q: %w", bridge, err)
	}
	var stale []string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.To4() == nil || ipn.String() == gw.String() {
			continue
		}
		stale = append(stale, ipn.String())
	}
	if len(stale) == 0 {
		return nil
	}
	ports, err := os.ReadDir(filepath.Join("/sys/class/net", bridge, "brif"))
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cannot use %q as the bridge of the default network: it is not a bridge", bridge)
	}
	if err != nil {
		return fmt.Errorf("cannot list the interfaces of bridge %q: %w", bridge, err)
	}
	if len(ports) > 0 {
		return fmt.Errorf("cannot use bridge %q for subnet %s: it has address %v and %d interfaces still on it (pods on another subnet)", bridge, subnet, stale, len(ports))
	}
	if err := deleteBridge(ctx, bridge); err != nil {
		return fmt.Errorf("cannot delete bridge %q, left with address %v by pods of another subnet: %w", bridge, stale, err)
	}
	return nil
}
