package store

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// isPublic reports whether a fetch from a public registry may connect to
// addr. A variable for the tests, which have only loopback.
var isPublic = func(addr netip.AddrPort) bool {
	ip := addr.Addr().Unmap()
	return ip.IsGlobalUnicast() && !ip.IsPrivate() && !cgnat.Contains(ip) && !thisNetwork.Contains(ip)
}

// cgnat is the shared address space of RFC 6598, where some clouds put
// their metadata services (100.100.100.200).
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// thisNetwork is 0.0.0.0/8, which Linux connects to the host itself.
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// dialGuard keeps a fetch from a public registry on public addresses:
// a hostile registry cannot make the node connect to its own services
// (cloud metadata at 169.254.169.254, a local kubelet or database) by a
// redirect or a foreign layer URL whose host name resolves there
// (go-containerregistry refuses only literal addresses). The check is on
// the address connected to, after resolution, so DNS answers cannot get
// around it. A registry at a non-public address (a local registry, an
// in-cluster mirror) is the operator's own: its fetches are not
// restricted. Connections to a configured HTTP proxy are allowed; behind
// one, the proxy's policy applies.
type dialGuard struct {
	registry string // host[:port] of the endpoint fetched from
	dialer   net.Dialer

	once     sync.Once
	internal bool

	proxies sync.Map // host:port of the proxies used
}

func newDialGuard(registry string) *dialGuard {
	g := &dialGuard{registry: registry, dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}}
	g.dialer.ControlContext = g.control
	return g
}

// install makes t dial through g and note the proxies it uses.
func (g *dialGuard) install(t *http.Transport) {
	proxy := t.Proxy
	t.Proxy = func(req *http.Request) (*url.URL, error) {
		if proxy == nil {
			return nil, nil
		}
		u, err := proxy(req)
		if u != nil {
			g.proxies.Store(canonicalAddr(u), true)
		}
		return u, err
	}
	t.DialContext = g.dial
}

func (g *dialGuard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if _, ok := g.proxies.Load(addr); ok {
		var d net.Dialer = g.dialer
		d.ControlContext = nil
		return d.DialContext(ctx, network, addr)
	}
	return g.dialer.DialContext(ctx, network, addr)
}

// control runs before each connection, on the address resolved.
func (g *dialGuard) control(ctx context.Context, _, address string, _ syscall.RawConn) error {
	addr, err := netip.ParseAddrPort(address)
	if err != nil || isPublic(addr) || g.registryInternal(ctx) {
		return nil
	}
	return fmt.Errorf("refusing to connect to %s while fetching from %s, a public registry: %w", address, g.registry, ErrNonPublicAddress)
}

// registryInternal reports whether the registry itself is at a
// non-public address (any of those its name resolves to).
func (g *dialGuard) registryInternal(ctx context.Context) bool {
	g.once.Do(func() {
		host, port := splitHostPort(g.registry)
		if host == "localhost" {
			g.internal = true
			return
		}
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return // unknown: restricted
		}
		for _, a := range addrs {
			if !isPublic(netip.AddrPortFrom(a, port)) {
				g.internal = true
			}
		}
	})
	return g.internal
}

// splitHostPort splits a registry's host[:port] (HTTPS's port when none).
func splitHostPort(hostport string) (string, uint16) {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport, 443
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return host, 443
	}
	return host, uint16(port)
}

// canonicalAddr is u's host:port, with the scheme's port if u has none,
// as net/http dials it.
func canonicalAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443", "socks5": "1080", "socks5h": "1080"}[u.Scheme]
	}
	return net.JoinHostPort(u.Hostname(), port)
}
