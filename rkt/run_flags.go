package main

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/store"
)

// podFlags are the pod-level options of run and prepare.
type podFlags struct {
	rt           runtimeFlags
	net          string
	ports        []string
	dns          []string
	dnsSearch    []string
	dnsOpt       []string
	hostname     string
	uuidFileSave string
	volumes      []string
	setEnv       []string
	pullPolicy   string
	noProgress   bool
	interactive  bool
	detach       bool
	annotations  []string
	sharedPID    bool
	hostPID      bool
	hostIPC      bool
	privateUsers string
	sysctls      []string
	help         bool

	namedPorts []portSpec // rkt 1.x NAME:HOSTPORT, resolved against the pod's images
}

// podFlagSet binds the pod-level flags; inherited holds rkt's global flags.
func podFlagSet(f *podFlags, inherited *pflag.FlagSet, withRun bool) *pflag.FlagSet {
	fs := pflag.NewFlagSet("pod", pflag.ContinueOnError)
	addRuntimeFlags(fs, &f.rt)
	fs.StringVar(&f.net, "net", "default", "networks: default, host, none, or a comma-separated list of named networks")
	fs.StringArrayVar(&f.ports, "port", nil, "publish a port: "+portHelp+"; repeatable")
	fs.StringSliceVar(&f.dns, "dns", nil, "name servers for the pod's resolv.conf ('host' copies the host's)")
	fs.StringSliceVar(&f.dnsSearch, "dns-search", nil, "DNS search domains")
	fs.StringSliceVar(&f.dnsOpt, "dns-opt", nil, "DNS resolver options")
	fs.StringVar(&f.hostname, "hostname", "", "the pod's hostname (default: rkt-<uuid>)")
	fs.StringVar(&f.uuidFileSave, "uuid-file-save", "", "write the pod's UUID to this file")
	fs.StringArrayVar(&f.volumes, "volume", nil, "pod volume NAME,kind=host|empty,source=PATH[,readOnly=true] (repeatable)")
	fs.StringArrayVar(&f.setEnv, "set-env", nil, "environment variable KEY=VALUE for every app (repeatable)")
	fs.StringVar(&f.pullPolicy, "pull-policy", string(store.PullNew), "when to fetch images: never, new, update")
	fs.BoolVar(&f.noProgress, "no-progress", false, "do not show image download progress")
	fs.StringArrayVar(&f.annotations, "annotation", nil, "pod annotation KEY=VALUE (repeatable)")
	fs.BoolVar(&f.sharedPID, "shared-pid", false, "the apps share one PID namespace")
	fs.BoolVar(&f.hostPID, "host-pid", false, "the apps run in the host's PID namespace")
	fs.BoolVar(&f.hostIPC, "host-ipc", false, "the apps run in the host's IPC namespace")
	fs.StringVar(&f.privateUsers, "private-users", "", "run the apps in a pod user namespace mapping uids and gids 0:HOSTID:LENGTH (e.g. 0:100000:65536)")
	fs.StringArrayVar(&f.sysctls, "sysctl", nil, "namespaced sysctl KEY=VALUE for the pod (repeatable)")
	fs.BoolVar(&f.interactive, "interactive", false, "run the (single) app with a terminal attached to this one")
	if withRun {
		fs.BoolVar(&f.detach, "detach", false, "start the pod and return; print its UUID")
	}
	fs.BoolVarP(&f.help, "help", "h", false, "help")
	fs.AddFlagSet(inherited)
	return fs
}

// podOptions converts the pod-level flags.
func (f *podFlags) podOptions() (stage0.PodOptions, map[string]bool, error) {
	o := stage0.PodOptions{Net: f.net, Hostname: f.hostname, SharedPID: f.sharedPID, HostPID: f.hostPID, HostIPC: f.hostIPC}
	if f.sharedPID && f.hostPID {
		return o, nil, fmt.Errorf("--shared-pid and --host-pid exclude each other")
	}
	var err error
	if o.UserNS, err = privateUsers(f.privateUsers); err != nil {
		return o, nil, err
	}
	for _, kv := range f.sysctls {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return o, nil, fmt.Errorf("invalid --sysctl %q: want KEY=VALUE", kv)
		}
		if o.Sysctls == nil {
			o.Sysctls = map[string]string{}
		}
		o.Sysctls[k] = v
	}
	f.namedPorts = nil
	for _, p := range f.ports {
		ps, err := parsePort(p)
		if err != nil {
			return o, nil, err
		}
		if ps.name != "" {
			f.namedPorts = append(f.namedPorts, ps)
			continue
		}
		o.Ports = append(o.Ports, ps.PortMapping)
	}
	if slices.Contains(f.dns, "host") {
		// the host's resolv.conf as it is: nothing to add to it
		if len(f.dns) > 1 || len(f.dnsSearch) > 0 || len(f.dnsOpt) > 0 {
			return o, nil, fmt.Errorf("--dns=host copies the host's resolv.conf: it takes no other --dns, --dns-search or --dns-opt")
		}
	} else if len(f.dns) > 0 || len(f.dnsSearch) > 0 || len(f.dnsOpt) > 0 {
		for _, s := range f.dns {
			if net.ParseIP(s) == nil {
				return o, nil, fmt.Errorf("invalid --dns %q: want an IP address or host", s)
			}
		}
		o.DNS = &schema.DNS{Servers: f.dns, Searches: f.dnsSearch, Options: f.dnsOpt}
	}
	vols := map[string]bool{}
	for _, v := range f.volumes {
		vol, err := parseVolume(v)
		if err != nil {
			return o, nil, err
		}
		if vols[vol.Name] {
			return o, nil, fmt.Errorf("duplicate --volume %q", vol.Name)
		}
		vols[vol.Name] = true
		o.Volumes = append(o.Volumes, vol)
	}
	for _, kv := range f.annotations {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return o, nil, fmt.Errorf("invalid --annotation %q: want KEY=VALUE", kv)
		}
		if o.Annotations == nil {
			o.Annotations = map[string]string{}
		}
		o.Annotations[k] = v
	}
	return o, vols, nil
}

// parseVolume parses NAME,kind=host|empty,source=PATH[,readOnly=true].
func parseVolume(s string) (schema.Volume, error) {
	parts := strings.Split(s, ",")
	v := schema.Volume{Name: parts[0], Kind: "empty"}
	for _, kv := range parts[1:] {
		k, val, _ := strings.Cut(kv, "=")
		switch k {
		case "kind":
			v.Kind = val
		case "source":
			v.Source = val
		case "readOnly", "readonly", "ro":
			b, err := strconv.ParseBool(val)
			if err != nil {
				return v, fmt.Errorf("invalid --volume %q: readOnly: %w", s, err)
			}
			v.ReadOnly = b
		default:
			return v, fmt.Errorf("invalid --volume %q: unknown key %q", s, k)
		}
	}
	switch v.Kind {
	case "host":
		if v.Source == "" {
			return v, fmt.Errorf("invalid --volume %q: kind=host needs source=PATH", s)
		}
		if _, err := os.Stat(v.Source); err != nil {
			return v, fmt.Errorf("invalid --volume %q: %w", s, err)
		}
	case "empty":
	default:
		return v, fmt.Errorf("invalid --volume %q: kind must be host or empty", s)
	}
	if v.Name == "" {
		return v, fmt.Errorf("invalid --volume %q: no name", s)
	}
	return v, nil
}
