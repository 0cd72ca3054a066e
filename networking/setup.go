package networking

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"

	"github.com/rkt/rkt/pkg/schema"
)

// ErrAlreadySetUp is returned (wrapped) by Setup for a pod whose network is
// already set up.
var ErrAlreadySetUp = errors.New("pod network already set up")

// rollbackTimeout bounds the Teardown that undoes a failed Setup.
const rollbackTimeout = 30 * time.Second

// Setup gives the pod its network: a network namespace bind-mounted at
// <pod dir>/netns (not for host) and a CNI ADD for every requested network,
// with the pod's ports published on the first one. Progress is saved in
// net-info.json before each step, so that Teardown undoes a Setup that
// failed or was killed half-way. On error Setup tears down what it did.
// With host networking Setup only records the mode: ports are ignored (apps
// bind host ports themselves). With "none" publishing ports is an error.
func Setup(ctx context.Context, cfg Config, pn PodNet) (*Result, error) {
	ps, err := Begin(ctx, cfg, pn)
	if err != nil {
		return nil, err
	}
	return ps.Add(ctx)
}

// PendingSetup is a Setup whose network namespace exists and whose CNI
// ADDs are still to do (Add).
type PendingSetup struct {
	cfg Config
	pn  PodNet
	res *Result
}

// Begin is the first half of Setup: everything up to the network namespace,
// which exists when it returns. The caller must call Add (whose rollback
// also undoes Begin), or Teardown. On error Begin tears down what it did.
func Begin(ctx context.Context, cfg Config, pn PodNet) (*PendingSetup, error) {
	if !filepath.IsAbs(pn.Dir) || pn.UUID == "" {
		return nil, fmt.Errorf("cannot set up network of pod %q in %q: need a UUID and an absolute pod dir", pn.UUID, pn.Dir)
	}
	names, err := parseNetList(pn.Net)
	if err != nil {
		return nil, err
	}
	// Pin the default subnet: SetDefaultSubnet may change it meanwhile.
	if cfg.DefaultSubnet, err = cfg.subnet(); err != nil {
		return nil, err
	}
	if prev, err := Load(pn.Dir); err == nil {
		if prev.Complete && !prev.TeardownStarted {
			return nil, fmt.Errorf("cannot set up network of pod %q: %w", pn.UUID, ErrAlreadySetUp)
		}
		if err := Teardown(ctx, cfg, pn.Dir); err != nil {
			return nil, fmt.Errorf("cannot clean up interrupted network setup or teardown of pod %q: %w", pn.UUID, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}

	res := &Result{UUID: pn.UUID, Net: pn.Net, Ports: pn.Ports}
	ps := &PendingSetup{cfg: cfg, pn: pn, res: res}
	if names[0] == NetHost {
		res.Complete = true
		return ps, save(pn.Dir, res)
	}
	if names[0] == NetNone && len(pn.Ports) > 0 {
		return nil, fmt.Errorf("cannot publish ports of pod %q: network %q has no interface but loopback", pn.UUID, NetNone)
	}
	if names[0] != NetNone {
		var builtin bool
		if res.Networks, builtin, err = planNetworks(cfg, names, pn); err != nil {
			return nil, fmt.Errorf("cannot set up network of pod %q: %w", pn.UUID, err)
		}
		if builtin {
			res.Masquerade = cfg.DefaultSubnet
		}
	}
	res.NetNS = schema.PodDir(pn.Dir).NetNS()
	if err := save(pn.Dir, res); err != nil {
		return nil, err
	}
	if err := createNS(ctx, cfg, pn, res); err != nil {
		return nil, ps.rollback(ctx, err)
	}
	return ps, nil
}

// Add is the second half of Setup: the CNI ADDs, in the namespace Begin
// created. On error it tears down the pod's network.
func (ps *PendingSetup) Add(ctx context.Context) (*Result, error) {
	if ps.res.Complete {
		return ps.res, nil
	}
	if err := addAll(ctx, ps.cfg, ps.pn, ps.res); err != nil {
		return nil, ps.rollback(ctx, err)
	}
	return ps.res, nil
}

// rollback tears down what the setup did and returns err.
func (ps *PendingSetup) rollback(ctx context.Context, err error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	if terr := Teardown(rctx, ps.cfg, ps.pn.Dir); terr != nil {
		return fmt.Errorf("%w (and cleaning up failed: %v)", err, terr)
	}
	return err
}

// planNetworks builds the config of every network, ports on the first one;
// builtin says whether the built-in default network is among them.
func planNetworks(cfg Config, names []string, pn PodNet) (nets []NetworkResult, builtin bool, err error) {
	for i, name := range names {
		withPorts := i == 0 && len(pn.Ports) > 0
		conf, isBuiltin, err := networkConfList(cfg, name, withPorts)
		if err != nil {
			return nil, false, err
		}
		builtin = builtin || isBuiltin
		caps := map[string]interface{}{}
		if withPorts {
			caps["portMappings"] = cniPortMappings(pn.Ports)
		}
		if dns := dnsCapability(pn.DNS); dns != nil {
			caps["dns"] = dns
		}
		var args [][2]string
		if len(pn.Args) > 0 {
			args = append([][2]string{{"IgnoreUnknown", "1"}}, pn.Args...)
		}
		nets = append(nets, NetworkResult{
			Name:           name,
			IfName:         fmt.Sprintf("eth%d", i),
			ConfList:       conf,
			CapabilityArgs: caps,
			Args:           args,
		})
	}
	return nets, builtin, nil
}

// dnsCapability is the "dns" runtimeConfig of the CNI conventions.
func dnsCapability(d *schema.DNS) map[string]interface{} {
	if d == nil {
		return nil
	}
	dns := map[string]interface{}{}
	for k, v := range map[string][]string{"servers": d.Servers, "searches": d.Searches, "options": d.Options} {
		if len(v) > 0 {
			dns[k] = v
		}
	}
	if len(dns) == 0 {
		return nil
	}
	return dns
}

func cniPortMappings(ports []schema.PortMapping) []interface{} {
	var pms []interface{}
	for _, p := range ports {
		proto := strings.ToLower(p.Protocol)
		if proto == "" {
			proto = "tcp"
		}
		pm := map[string]interface{}{
			"hostPort":      p.HostPort,
			"containerPort": p.ContainerPort,
			"protocol":      proto,
		}
		if p.HostIP != "" {
			pm["hostIP"] = p.HostIP
		}
		pms = append(pms, pm)
	}
	return pms
}

// createNS reserves the masquerade rule and creates the namespace.
func createNS(ctx context.Context, cfg Config, pn PodNet, res *Result) error {
	if err := cfg.ensureStateDir(); err != nil {
		return err
	}
	if res.Masquerade != "" {
		if err := acquireMasquerade(ctx, cfg, res.Masquerade, pn.UUID); err != nil {
			return fmt.Errorf("cannot set up network of pod %q: %w", pn.UUID, err)
		}
	}
	create := createNetNS
	if pn.CreateNetNS != nil {
		create = pn.CreateNetNS
	}
	if err := create(res.NetNS); err != nil {
		return fmt.Errorf("cannot set up network of pod %q: %w", pn.UUID, err)
	}
	return nil
}

// addAll adds every planned network, saving progress after each.
func addAll(ctx context.Context, cfg Config, pn PodNet, res *Result) error {
	cni := newCNI(cfg)
	for i := range res.Networks {
		n := &res.Networks[i]
		list, err := libcni.ConfListFromBytes(n.ConfList)
		if err != nil {
			return fmt.Errorf("invalid config of network %q: %w", n.Name, err)
		}
		r, err := cni.AddNetworkList(ctx, list, runtimeConf(pn.UUID, res.NetNS, n))
		if err != nil {
			return fmt.Errorf("cannot add pod %q to network %q: %w", pn.UUID, n.Name, err)
		}
		if err := fillResult(n, r); err != nil {
			return fmt.Errorf("cannot read result of network %q for pod %q: %w", n.Name, pn.UUID, err)
		}
		n.Added = true
		if i < len(res.Networks)-1 {
			if err := save(pn.Dir, res); err != nil {
				return err
			}
		}
	}
	// Complete is saved with the last network's result, not durably: after
	// a reboot the namespace and what the ADDs did in it are gone, and the
	// durable plan saved before the ADDs is what Teardown's DELs need.
	res.Complete = true
	return saveVolatile(pn.Dir, res)
}

func newCNI(cfg Config) *libcni.CNIConfig {
	e := newBoundedExec()
	return libcni.NewCNIConfigWithCacheDir(cfg.pluginDirs(), cfg.cacheDir(), &e)
}

func runtimeConf(uuid, netns string, n *NetworkResult) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{
		ContainerID:    uuid,
		NetNS:          netns,
		IfName:         n.IfName,
		Args:           n.Args,
		CapabilityArgs: n.CapabilityArgs,
	}
}

// fillResult copies IPs, routes and DNS of a CNI result into n.
func fillResult(n *NetworkResult, r cnitypes.Result) error {
	res, err := types100.NewResultFromResult(r)
	if err != nil {
		return err
	}
	for _, ip := range res.IPs {
		c := IPConfig{Address: ip.Address.String()}
		if ip.Gateway != nil {
			c.Gateway = ip.Gateway.String()
		}
		n.IPs = append(n.IPs, c)
	}
	for _, rt := range res.Routes {
		route := Route{Dst: rt.Dst.String()}
		if rt.GW != nil {
			route.GW = rt.GW.String()
		}
		n.Routes = append(n.Routes, route)
	}
	n.DNS = schema.DNS{Servers: res.DNS.Nameservers, Searches: res.DNS.Search, Options: res.DNS.Options}
	return nil
}
