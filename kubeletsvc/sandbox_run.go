package kubeletsvc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/kubeletsvc/internal/registrar"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/pkg/sysctl"
	"github.com/rkt/rkt/stage0"
)

// RunPodSandbox creates and starts a pod sandbox: a stage0 pod without apps
// (stage1 in sandbox mode) holding the pod's namespaces, with its network
// set up. The whole config is checked (translateSandbox) before anything
// is created.
func (c *criService) RunPodSandbox(ctx context.Context, r *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	cfg := r.GetConfig()
	if err := c.checkRuntimeHandler(r.GetRuntimeHandler()); err != nil {
		return nil, err
	}
	opts, err := translateSandbox(cfg, r.GetRuntimeHandler())
	if err != nil {
		return nil, err
	}
	if opts.UserNS != nil && c.usernsErr != nil {
		return nil, fmt.Errorf("%w: pod user namespaces are not supported here: %v", errFailedPrecondition, c.usernsErr)
	}
	if opts.Net == "" {
		// refused before anything is created, as the kubelet's own check of
		// NetworkReady would
		if ok, why := c.rt.NetworkReady(); !ok {
			return nil, fmt.Errorf("%w: the pod network is not ready: %s", errFailedPrecondition, why)
		}
		name, err := c.rt.PodNetwork()
		if err != nil {
			return nil, fmt.Errorf("%w: the pod network is not ready: %v", errFailedPrecondition, err)
		}
		opts.Net = name
	}
	if opts.Net == stage0.NetHost && opts.Hostname == "" {
		opts.Hostname, _ = os.Hostname()
	}
	uuid, err := stage0.NewUUID()
	if err != nil {
		return nil, err
	}
	key := sandboxKey(cfg.GetMetadata())
	done, err := c.reserve(ctx, c.sandboxNames, key, uuid, c.sandboxGone)
	if err != nil {
		var er *registrar.ErrReserved
		if errors.As(err, &er) {
			return nil, fmt.Errorf("%w: pod sandbox name %q is already used by sandbox %s", errAlreadyExists, key, er.Owner)
		}
		return nil, err
	}
	defer done()
	opts.UUID = uuid
	if _, err := c.rt.Sandbox(ctx, opts); err != nil {
		c.sandboxNames.Release(uuid)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if rerr := c.rt.Remove(rctx, uuid, true); rerr != nil && !errors.Is(rerr, stage0.ErrPodNotFound) {
			c.log.Warn("cannot remove the pod of a failed sandbox", "pod", uuid, "error", rerr)
		}
		return nil, fmt.Errorf("cannot run pod sandbox %q: %w", key, err)
	}
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: uuid}, nil
}

// checkRuntimeHandler accepts the default handler and the names of
// Config.RuntimeHandlers (which run the same way).
func (c *criService) checkRuntimeHandler(h string) error {
	switch h {
	case "", runtimeName, "default":
		return nil
	}
	if slices.Contains(c.cfg.RuntimeHandlers, h) {
		return nil
	}
	return invalidf("unknown runtime handler %q (rkt has the default handler and those of --runtime-handler)", h)
}

// maxHostname is the kernel's limit (HOST_NAME_MAX).
const maxHostname = 64

// badHostnameRune: a hostname is one word of one line (it is written to
// the pod's /etc/hosts and /etc/hostname) and no path.
func badHostnameRune(r rune) bool {
	return r == '/' || unicode.IsSpace(r) || unicode.IsControl(r)
}

// translateSandbox checks a sandbox config and translates it to stage0's
// pod options. It is pure: Net is left empty for the pod network (the
// caller picks it) and NetHost for the node's.
func translateSandbox(cfg *runtimeapi.PodSandboxConfig, handler string) (stage0.PodOptions, error) {
	md := cfg.GetMetadata()
	if md.GetName() == "" {
		return stage0.PodOptions{}, invalidf("sandbox config: metadata.name is empty")
	}
	opts, err := translateSandboxOpts(cfg, handler)
	if err != nil {
		return stage0.PodOptions{}, fmt.Errorf("pod sandbox %q: %w", md.GetName(), err)
	}
	return opts, nil
}

func translateSandboxOpts(cfg *runtimeapi.PodSandboxConfig, handler string) (stage0.PodOptions, error) {
	if err := checkMetadataSize(cfg.GetLabels(), cfg.GetAnnotations()); err != nil {
		return stage0.PodOptions{}, err
	}
	if err := checkLogDirectory(cfg.GetLogDirectory()); err != nil {
		return stage0.PodOptions{}, err
	}
	if h := cfg.GetHostname(); len(h) > maxHostname || strings.ContainsFunc(h, badHostnameRune) {
		return stage0.PodOptions{}, invalidf("hostname %q is not a host name", h)
	}
	linux := cfg.GetLinux()
	if p := linux.GetCgroupParent(); strings.ContainsRune(p, 0) || slices.Contains(strings.Split(p, "/"), "..") {
		return stage0.PodOptions{}, invalidf("linux.cgroup_parent %q is not a cgroup path", p)
	}
	nsOpts := linux.GetSecurityContext().GetNamespaceOptions()
	hostNet := nsOpts.GetNetwork() == runtimeapi.NamespaceMode_NODE
	hostIPC := nsOpts.GetIpc() == runtimeapi.NamespaceMode_NODE
	for k, v := range linux.GetSysctls() {
		if err := sysctl.Check(k, v); err != nil {
			return stage0.PodOptions{}, invalidf("linux.sysctls: %v", err)
		}
		if ns := sysctl.Namespace(k); ns == "net" && hostNet || ns == "ipc" && hostIPC {
			return stage0.PodOptions{}, invalidf("linux.sysctls: %q needs the pod's own %s namespace", k, ns)
		}
	}
	annos, err := sandboxAnnotations(cfg, handler)
	if err != nil {
		return stage0.PodOptions{}, err
	}
	opts := stage0.PodOptions{
		Hostname:     cfg.GetHostname(),
		SharedPID:    nsOpts.GetPid() == runtimeapi.NamespaceMode_POD,
		HostPID:      nsOpts.GetPid() == runtimeapi.NamespaceMode_NODE,
		HostIPC:      hostIPC,
		Sysctls:      linux.GetSysctls(),
		CgroupParent: linux.GetCgroupParent(),
		// the kubelet's cgroup parent is the pod's own cgroup (its
		// per-pod slice with the systemd driver)
		OwnCgroupParent: linux.GetCgroupParent() != "",
		Annotations:     annos,
	}
	if opts.UserNS, err = podUserNS(nsOpts.GetUsernsOptions()); err != nil {
		return opts, err
	}
	if hostNet {
		opts.Net = stage0.NetHost
	}
	if d := cfg.GetDnsConfig(); d != nil {
		for _, list := range []struct {
			name string
			vals []string
		}{{"servers", d.GetServers()}, {"searches", d.GetSearches()}, {"options", d.GetOptions()}} {
			for i, v := range list.vals {
				if v == "" || strings.ContainsAny(v, " \t\n\r\x00") {
					return opts, invalidf("dns_config.%s[%d] %q is empty or has blanks", list.name, i, v)
				}
			}
		}
		for i, v := range d.GetServers() {
			if net.ParseIP(v) == nil {
				return opts, invalidf("dns_config.servers[%d] %q is not an IP address", i, v)
			}
		}
		opts.DNS = &schema.DNS{Servers: d.GetServers(), Searches: d.GetSearches(), Options: d.GetOptions()}
	}
	for i, p := range cfg.GetPortMappings() {
		if p.GetHostPort() <= 0 {
			continue // only published ports need a mapping
		}
		if p.GetHostPort() > 65535 || p.GetContainerPort() <= 0 || p.GetContainerPort() > 65535 {
			return opts, invalidf("port_mappings[%d]: ports %d:%d are not in 1-65535", i, p.GetHostPort(), p.GetContainerPort())
		}
		if _, ok := runtimeapi.Protocol_name[int32(p.GetProtocol())]; !ok {
			return opts, invalidf("port_mappings[%d].protocol: unknown value %d", i, p.GetProtocol())
		}
		if ip := p.GetHostIp(); ip != "" && net.ParseIP(ip) == nil {
			return opts, invalidf("port_mappings[%d].host_ip %q is not an IP address", i, ip)
		}
		opts.Ports = append(opts.Ports, schema.PortMapping{
			Protocol:      strings.ToLower(p.GetProtocol().String()),
			ContainerPort: int(p.GetContainerPort()),
			HostPort:      int(p.GetHostPort()),
			HostIP:        p.GetHostIp(),
		})
	}
	if res := linux.GetResources(); res != nil {
		if err := checkResources("linux.resources", res); err != nil {
			return opts, err
		}
		opts.Resources = linuxResources(res)
	}
	return opts, nil
}

// checkUserns validates user namespace options: NODE (or none) is the
// host's; POD needs exactly one uid and one gid mapping of container ID 0;
// CONTAINER and TARGET are invalid for a pod.
func checkUserns(u *runtimeapi.UserNamespace) error {
	_, err := podUserNS(u)
	return err
}

// idMappings converts CRI ID mappings for stage0.
func idMappings(in []*runtimeapi.IDMapping) []specs.LinuxIDMapping {
	out := make([]specs.LinuxIDMapping, 0, len(in))
	for _, m := range in {
		out = append(out, specs.LinuxIDMapping{ContainerID: m.GetContainerId(), HostID: m.GetHostId(), Size: m.GetLength()})
	}
	return out
}

// podUserNS translates user namespace options to the pod's user namespace
// (nil: the host's).
func podUserNS(u *runtimeapi.UserNamespace) (*schema.UserNamespace, error) {
	if u == nil {
		return nil, nil // none asked: the host's
	}
	switch u.GetMode() {
	case runtimeapi.NamespaceMode_NODE:
		return nil, nil
	case runtimeapi.NamespaceMode_POD:
		out := &schema.UserNamespace{UIDMappings: idMappings(u.GetUids()), GIDMappings: idMappings(u.GetGids())}
		if err := stage0.CheckUserNS(out); err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, invalidf("user namespace mode %v is not valid for a pod sandbox", u.GetMode())
}
