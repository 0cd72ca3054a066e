package stage0

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/rkt/rkt/networking"
	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/schema"
)

// podHostname is the hostname the pod's apps see: the host's for a
// host-network pod, else the pod's own.
func podHostname(pm *schema.PodManifest) string {
	if pm.Net == networking.NetHost {
		if h, err := os.Hostname(); err == nil {
			return h
		}
	}
	return pm.Hostname
}

// writeEtcFiles writes the pod's hosts, hostname and resolv.conf, which
// every app bind-mounts.
func writeEtcFiles(p *pod, pm *schema.PodManifest, nr *networking.Result) error {
	hostNet := pm.Net == networking.NetHost
	hostname := podHostname(pm)
	var hosts strings.Builder
	if hostNet {
		if b, err := os.ReadFile("/etc/hosts"); err == nil {
			hosts.Write(b)
		}
	} else {
		hosts.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
		for _, ip := range nr.PodIPs() {
			fmt.Fprintf(&hosts, "%s\t%s\n", ip, hostname)
		}
	}
	resolv, err := resolvConf(pm.DNS, nr, hostNet)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data string
	}{
		{podHostsFile, hosts.String()},
		{podHostnameFile, hostname + "\n"},
		{podResolvFile, resolv},
	} {
		if err := fileperm.WriteFileVolatile(filepath.Join(p.dir, f.name), []byte(f.data), fileperm.Public); err != nil {
			return fmt.Errorf("cannot write %s of pod %s: %w", f.name, p.uuid, err)
		}
	}
	return nil
}

// resolvConf is the pod's resolv.conf: the DNS asked for, else what the
// networks returned, else the host's.
func resolvConf(dns *schema.DNS, nr *networking.Result, hostNet bool) (string, error) {
	d := dns
	if d == nil || (len(d.Servers) == 0 && len(d.Searches) == 0 && len(d.Options) == 0) {
		nd := nr.DNS()
		d = &nd
	}
	if len(d.Servers) == 0 && len(d.Searches) == 0 && len(d.Options) == 0 {
		return hostResolvConf(hostNet)
	}
	var s strings.Builder
	for _, srv := range d.Servers {
		fmt.Fprintf(&s, "nameserver %s\n", srv)
	}
	if len(d.Searches) > 0 {
		fmt.Fprintf(&s, "search %s\n", strings.Join(d.Searches, " "))
	}
	if len(d.Options) > 0 {
		fmt.Fprintf(&s, "options %s\n", strings.Join(d.Options, " "))
	}
	return s.String(), nil
}

// resolvedConf is systemd-resolved's list of the real upstream servers.
const resolvedConf = "/run/systemd/resolve/resolv.conf"

// hostResolvConf returns the host's resolv.conf; when it names only
// loopback servers (a local stub such as systemd-resolved, unreachable from
// a pod's network namespace) the upstream list of systemd-resolved is used
// instead, as the kubelet does.
func hostResolvConf(hostNet bool) (string, error) {
	b, err := os.ReadFile("/etc/resolv.conf")
	if err != nil && !os.IsNotExist(err) {
		return "", fmt.Errorf("cannot read the host's resolv.conf: %w", err)
	}
	if hostNet || !onlyLoopbackServers(string(b)) {
		return string(b), nil
	}
	if up, err := os.ReadFile(resolvedConf); err == nil {
		return string(up), nil
	}
	return string(b), nil
}

func onlyLoopbackServers(conf string) bool {
	n := 0
	for _, line := range strings.Split(conf, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		n++
		if ip := net.ParseIP(f[1]); ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return n > 0
}
