package main

import (
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/store"
)

// portHelp is the grammar of --port.
const portHelp = "[HOSTIP:]HOSTPORT:CONTAINERPORT[/PROTO] (docker's order: host first), " +
	"or NAME:[HOSTIP:]HOSTPORT (rkt 1.x: NAME is a port the image exposes, named PORT-PROTO, e.g. 80-tcp)"

// portSpec is one --port value: a mapping, or (name set) a rkt 1.x named
// port whose container port and protocol come from the pod's images.
type portSpec struct {
	schema.PortMapping
	name string
}

// portName is a rkt 1.x port name: lowercase letters, digits and single
// dashes, with at least one letter (so that it is never a port number, a
// port range or an IP address).
var portName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func isPortName(s string) bool {
	return portName.MatchString(s) && strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz")
}

// parsePort parses a --port value. The two forms cannot be confused: a
// docker-order value starts with a port number or a host IP, a rkt 1.x
// value with a name, which has a letter and no dot.
//
//	[HOSTIP:]HOSTPORT:CONTAINERPORT[/PROTO]   8080:80, 127.0.0.1:5353:53/udp, [::1]:8080:80
//	NAME:[HOSTIP:]HOSTPORT                    80-tcp:8080, http:127.0.0.1:8080
//
// and rkt 1.x's `app sandbox` form, NAME:PROTO:PODPORT:[HOSTIP]:HOSTPORT,
// which names the port and gives its number.
func parsePort(s string) (portSpec, error) {
	bad := func(format string, a ...any) (portSpec, error) {
		return portSpec{}, fmt.Errorf("invalid --port %q: %s; want %s", s, fmt.Sprintf(format, a...), portHelp)
	}
	first, rest, ok := strings.Cut(s, ":")
	if !ok {
		return bad("no host port (publishing to a random host port is not supported)")
	}
	if isPortName(first) {
		if f := strings.SplitN(rest, ":", 3); len(f) == 3 && (f[0] == "tcp" || f[0] == "udp" || f[0] == "sctp") {
			ps := portSpec{PortMapping: schema.PortMapping{Protocol: f[0]}}
			var err error
			if ps.ContainerPort, err = parsePortNumber(f[1]); err != nil {
				return bad("pod port: %v", err)
			}
			if ps.HostIP, ps.HostPort, err = parseHostPort(strings.TrimPrefix(f[2], ":")); err != nil {
				return bad("%v", err)
			}
			return ps, nil
		}
		ps := portSpec{name: first}
		var err error
		if ps.HostIP, ps.HostPort, err = parseHostPort(rest); err != nil {
			return bad("%v", err)
		}
		return ps, nil
	}
	i := strings.LastIndex(s, ":")
	host, ctr := s[:i], s[i+1:]
	if strings.Contains(host, "/") {
		return bad("the container port and its protocol come last, as in docker (e.g. HOSTPORT:80/tcp)")
	}
	ps := portSpec{PortMapping: schema.PortMapping{Protocol: "tcp"}}
	if p, proto, ok := strings.Cut(ctr, "/"); ok {
		ctr, ps.Protocol = p, strings.ToLower(proto)
	}
	switch ps.Protocol {
	case "tcp", "udp", "sctp":
	default:
		return bad("unknown protocol %q (tcp, udp or sctp)", ps.Protocol)
	}
	var err error
	if ps.ContainerPort, err = parsePortNumber(ctr); err != nil {
		return bad("container port: %v", err)
	}
	if ps.HostIP, ps.HostPort, err = parseHostPort(host); err != nil {
		return bad("%v", err)
	}
	return ps, nil
}

// parseHostPort parses [HOSTIP:]HOSTPORT; an IPv6 HOSTIP is in brackets.
func parseHostPort(s string) (string, int, error) {
	ip, port := "", s
	if strings.HasPrefix(s, "[") {
		j := strings.Index(s, "]:")
		if j < 0 {
			return "", 0, fmt.Errorf("no \"]:\" after the IPv6 host address")
		}
		ip, port = s[1:j], s[j+2:]
		if a := net.ParseIP(ip); a == nil || a.To4() != nil {
			return "", 0, fmt.Errorf("bad IPv6 host address %q", ip)
		}
	} else if i := strings.LastIndex(s, ":"); i >= 0 {
		ip, port = s[:i], s[i+1:]
		if strings.Contains(ip, ":") {
			return "", 0, fmt.Errorf("bad host address %q (an IPv6 address goes in brackets: [::1]:8080:80)", ip)
		}
		if a := net.ParseIP(ip); a == nil {
			return "", 0, fmt.Errorf("bad host address %q", ip)
		}
	}
	p, err := parsePortNumber(port)
	if err != nil {
		return "", 0, fmt.Errorf("host port: %v", err)
	}
	return ip, p, nil
}

func parsePortNumber(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p <= 0 || p > 65535 {
		if strings.Contains(s, "-") {
			return 0, fmt.Errorf("%q: port ranges are not supported", s)
		}
		return 0, fmt.Errorf("%q is not a port number (1-65535)", s)
	}
	return p, nil
}

// exposedPortNames names the ports the images expose as rkt 1.x named the
// ports of docker images: "80/tcp" is 80-tcp.
func exposedPortNames(s *store.Store, ids []string) (map[string]schema.PortMapping, error) {
	names := map[string]schema.PortMapping{}
	for _, id := range ids {
		img, err := s.ResolveImage(id)
		if err != nil {
			return nil, fmt.Errorf("cannot read image %s: %w", id, err)
		}
		if img.Config == nil {
			continue
		}
		for p := range img.Config.Config.ExposedPorts {
			port, proto, _ := strings.Cut(p, "/")
			if proto == "" {
				proto = "tcp"
			}
			n, err := strconv.Atoi(port)
			if err != nil {
				continue
			}
			names[port+"-"+strings.ToLower(proto)] = schema.PortMapping{Protocol: strings.ToLower(proto), ContainerPort: n}
		}
	}
	return names, nil
}

// resolvePortNames gives the named ports their container port and protocol.
func resolvePortNames(specs []portSpec, exposed map[string]schema.PortMapping) ([]schema.PortMapping, error) {
	var out []schema.PortMapping
	for _, ps := range specs {
		e, ok := exposed[ps.name]
		if !ok {
			var have []string
			for n := range exposed {
				have = append(have, n)
			}
			sort.Strings(have)
			what := "no ports"
			if len(have) > 0 {
				what = strings.Join(have, ", ")
			}
			return nil, fmt.Errorf("invalid --port %s:...: the pod's images expose no port named %q (they expose %s); "+
				"publish any container port with --port=[HOSTIP:]HOSTPORT:CONTAINERPORT[/PROTO]", ps.name, ps.name, what)
		}
		pm := ps.PortMapping
		pm.ContainerPort, pm.Protocol = e.ContainerPort, e.Protocol
		out = append(out, pm)
	}
	return out, nil
}
