package store

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
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
// restricted. Which one it is, is the address its first connection
// reached, not what its name resolves to: a public registry's owner could
// add a private record to its name (or answer a later lookup with one).
// Connections to a configured HTTP proxy are allowed; behind one, the
// proxy's policy applies.
type dialGuard struct {
	registry     string // host[:port] of the endpoint fetched from
	registryHost string
	registryPort string // "" when registry names none

	dialer net.Dialer

	mu       sync.Mutex
	decided  bool // a connection to the registry was made
	internal bool // the first one reached a non-public address

	proxies sync.Map // host:port of the proxies used
}

// registryDial marks the context of a dial to the registry itself.
type registryDial struct{}

func newDialGuard(registry string) *dialGuard {
	g := &dialGuard{registry: registry, registryHost: registry, dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}}
	if host, port, err := net.SplitHostPort(registry); err == nil {
		g.registryHost, g.registryPort = host, port
	}
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
	toRegistry := g.isRegistry(addr)
	if toRegistry {
		ctx = context.WithValue(ctx, registryDial{}, true)
	}
	conn, err := g.dialer.DialContext(ctx, network, addr)
	if err == nil && toRegistry {
		g.decide(conn.RemoteAddr())
	}
	return conn, err
}

// isRegistry reports whether addr (host:port, as net/http dials) is the
// registry's: its host, and its port or, when it names none, HTTPS's or
// the plain HTTP fallback's.
func (g *dialGuard) isRegistry(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || !strings.EqualFold(host, g.registryHost) {
		return false
	}
	if g.registryPort != "" {
		return port == g.registryPort
	}
	return port == "443" || port == "80"
}

// decide records where the first connection to the registry went.
func (g *dialGuard) decide(remote net.Addr) {
	addr, err := netip.ParseAddrPort(remote.String())
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.decided && err == nil {
		g.decided, g.internal = true, !isPublic(addr)
	}
}

// control runs before each connection, on the address resolved.
func (g *dialGuard) control(ctx context.Context, _, address string, _ syscall.RawConn) error {
	addr, err := netip.ParseAddrPort(address)
	if err != nil || isPublic(addr) {
		return nil
	}
	g.mu.Lock()
	decided, internal := g.decided, g.internal
	g.mu.Unlock()
	if internal || (!decided && ctx.Value(registryDial{}) != nil) {
		return nil // an internal registry's fetch, or the registry's own first connection
	}
	return fmt.Errorf("refusing to connect to %s while fetching from %s, a public registry: %w", address, g.registry, ErrNonPublicAddress)
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
