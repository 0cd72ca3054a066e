package kubeletsvc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/kubeletsvc/internal/registrar"
	"github.com/rkt/rkt/networking"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage0"
)

// RunPodSandbox creates and starts a pod sandbox: a stage0 pod without apps
// (stage1 in sandbox mode) holding the pod's namespaces, with its network
// set up.
func (c *criService) RunPodSandbox(ctx context.Context, r *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	cfg := r.GetConfig()
	md := cfg.GetMetadata()
	if md == nil || md.GetName() == "" {
		return nil, invalidf("sandbox config has no metadata name")
	}
	if err := checkRuntimeHandler(r.GetRuntimeHandler()); err != nil {
		return nil, err
	}
	uuid, err := newUUID()
	if err != nil {
		return nil, err
	}
	key := sandboxKey(md)
	if err := c.sandboxNames.Reserve(key, uuid); err != nil {
		var er *registrar.ErrReserved
		if errors.As(err, &er) {
			return nil, fmt.Errorf("%w: pod sandbox name %q is already used by sandbox %s", errAlreadyExists, key, er.Owner)
		}
		return nil, err
	}
	opts, err := c.podOptions(cfg, r.GetRuntimeHandler())
	if err != nil {
		c.sandboxNames.Release(uuid)
		return nil, err
	}
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

// checkRuntimeHandler accepts the default handler only.
func checkRuntimeHandler(h string) error {
	switch h {
	case "", runtimeName, "default":
		return nil
	}
	return invalidf("unknown runtime handler %q (rkt has only the default handler)", h)
}

// podOptions translates a sandbox config to stage0's pod options.
func (c *criService) podOptions(cfg *runtimeapi.PodSandboxConfig, handler string) (stage0.PodOptions, error) {
	annos, err := sandboxAnnotations(cfg, handler)
	if err != nil {
		return stage0.PodOptions{}, err
	}
	nsOpts := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	opts := stage0.PodOptions{
		Hostname:     cfg.GetHostname(),
		SharedPID:    nsOpts.GetPid() == runtimeapi.NamespaceMode_POD,
		HostPID:      nsOpts.GetPid() == runtimeapi.NamespaceMode_NODE,
		HostIPC:      nsOpts.GetIpc() == runtimeapi.NamespaceMode_NODE,
		Sysctls:      cfg.GetLinux().GetSysctls(),
		CgroupParent: cfg.GetLinux().GetCgroupParent(),
		Annotations:  annos,
	}
	if opts.UserNS, err = podUserNS(nsOpts.GetUsernsOptions()); err != nil {
		return opts, err
	}
	if opts.UserNS != nil && c.usernsErr != nil {
		return opts, fmt.Errorf("%w: pod user namespaces are not supported here: %v", errFailedPrecondition, c.usernsErr)
	}
	if nsOpts.GetNetwork() == runtimeapi.NamespaceMode_NODE {
		opts.Net = networking.NetHost
		if opts.Hostname == "" {
			opts.Hostname, _ = os.Hostname()
		}
	} else {
		name, err := networking.CRINetwork(c.net)
		if err != nil {
			return opts, fmt.Errorf("%w: the pod network is not ready: %v", errFailedPrecondition, err)
		}
		opts.Net = name
	}
	if d := cfg.GetDnsConfig(); d != nil {
		opts.DNS = &schema.DNS{Servers: d.GetServers(), Searches: d.GetSearches(), Options: d.GetOptions()}
	}
	for _, p := range cfg.GetPortMappings() {
		if p.GetHostPort() <= 0 {
			continue // only published ports need a mapping
		}
		opts.Ports = append(opts.Ports, schema.PortMapping{
			Protocol:      strings.ToLower(p.GetProtocol().String()),
			ContainerPort: int(p.GetContainerPort()),
			HostPort:      int(p.GetHostPort()),
			HostIP:        p.GetHostIp(),
		})
	}
	if res := cfg.GetLinux().GetResources(); res != nil {
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
		out := &schema.UserNamespace{}
		for _, kind := range []struct {
			name string
			in   []*runtimeapi.IDMapping
			out  *[]specs.LinuxIDMapping
		}{{"uid", u.GetUids(), &out.UIDMappings}, {"gid", u.GetGids(), &out.GIDMappings}} {
			m := kind.in
			if len(m) != 1 || m[0].GetContainerId() != 0 || m[0].GetLength() == 0 {
				return nil, invalidf("user namespace: want exactly one %s mapping of container ID 0, got %v", kind.name, m)
			}
			*kind.out = []specs.LinuxIDMapping{{ContainerID: 0, HostID: m[0].GetHostId(), Size: m[0].GetLength()}}
		}
		return out, nil
	}
	return nil, invalidf("user namespace mode %v is not valid for a pod sandbox", u.GetMode())
}
