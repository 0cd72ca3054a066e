package kubeletsvc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

// PodSandboxStats returns the resource usage of a sandbox and its
// containers.
func (c *criService) PodSandboxStats(ctx context.Context, r *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	s, err := c.getSandbox(ctx, r.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	st, err := c.sandboxStats(ctx, s, s.containers())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: st}, nil
}

// ListPodSandboxStats returns the usage of the sandboxes a filter selects.
func (c *criService) ListPodSandboxStats(ctx context.Context, r *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	stats, err := c.listSandboxStats(ctx, r.GetFilter())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: stats}, nil
}

// StreamPodSandboxStats is ListPodSandboxStats in batches (sendBatches).
func (c *criService) StreamPodSandboxStats(r *runtimeapi.StreamPodSandboxStatsRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxStatsResponse]) error {
	stats, err := c.listSandboxStats(stream.Context(), r.GetFilter())
	if err != nil {
		return err
	}
	return sendBatches(stream, stats, func(b []*runtimeapi.PodSandboxStats) *runtimeapi.StreamPodSandboxStatsResponse {
		return &runtimeapi.StreamPodSandboxStatsResponse{PodSandboxStats: b}
	})
}

func (c *criService) listSandboxStats(ctx context.Context, f *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	snap, err := c.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	var sel []*sandbox
	for _, s := range snap.sbs {
		if f.GetId() != "" && !strings.HasPrefix(s.ID(), f.GetId()) {
			continue
		}
		if !matchLabels(s.cfg.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		sel = append(sel, s)
	}
	out := make([]*runtimeapi.PodSandboxStats, 0, len(sel))
	for _, s := range sel { // one after the other, as listContainerStats
		st, err := c.sandboxStats(ctx, s, snap.containersOf(s))
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// sandboxStats sums the usage of a sandbox's apps (from stage1) and reads
// the counters of its network namespace's interfaces; ctrs are
// its containers. The answer is shared (kept while stage0 returns the same
// stats of the pod and its containers): read-only.
func (c *criService) sandboxStats(ctx context.Context, s *sandbox, ctrs []*container) (*runtimeapi.PodSandboxStats, error) {
	if !s.ready() {
		return s.statsItem(), nil
	}
	ps, err := c.rt.PodStats(ctx, s.ID())
	if err != nil {
		if isNotFound(err) || errors.Is(err, stage0.ErrNotRunning) {
			return s.statsItem(), nil
		}
		return nil, fmt.Errorf("cannot read the stats of pod sandbox %s: %w", s.ID(), err)
	}
	cs := make([]*runtimeapi.ContainerStats, 0, len(ctrs))
	for _, ct := range ctrs {
		st, err := c.containerStats(ctx, ct)
		if err != nil {
			return nil, err
		}
		cs = append(cs, st)
	}
	if k := s.kept.Load(); k != nil && k.src == ps && slices.Equal(k.ctrs, cs) {
		return k.item, nil
	}
	out := s.statsItem()
	out.Linux.Cpu, out.Linux.Memory = c.usage(s.ID(), ps)
	out.Linux.Io = ioUsage(ps)
	out.Linux.Process = &runtimeapi.ProcessUsage{Timestamp: ps.Timestamp.UnixNano(), ProcessCount: &runtimeapi.UInt64Value{Value: ps.Processes}}
	if s.cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() != runtimeapi.NamespaceMode_NODE {
		out.Linux.Network = networkUsage(ps, s.pod)
	}
	out.Linux.Containers = cs
	s.kept.Store(&keptStats[runtimeapi.PodSandboxStats]{src: ps, ctrs: cs, item: out})
	return out, nil
}

// networkUsage converts a pod's interface counters to the CRI's; nil
// when there are none (the host's network, loopback only) or they could
// not be read. The default
// interface (the kubelet's figure of the pod's network) is the pod's first
// network's (eth0), not the first listed: the kernel's fallback tunnel
// devices (tunl0, gre0, sit0...), made in every network namespace where
// their modules are loaded, come before it.
func networkUsage(ps *stage0.AppStats, pod *stage0.PodStatus) *runtimeapi.NetworkUsage {
	if len(ps.Networks) == 0 {
		return nil
	}
	def := "eth0" // networking names the first network's interface so
	if len(pod.Networks) > 0 && pod.Networks[0].Interface != "" {
		def = pod.Networks[0].Interface
	}
	nu := &runtimeapi.NetworkUsage{Timestamp: ps.Timestamp.UnixNano()}
	for _, n := range ps.Networks {
		iface := &runtimeapi.NetworkInterfaceUsage{Name: n.Name,
			RxBytes: &runtimeapi.UInt64Value{Value: n.RxBytes}, RxErrors: &runtimeapi.UInt64Value{Value: n.RxErrors},
			TxBytes: &runtimeapi.UInt64Value{Value: n.TxBytes}, TxErrors: &runtimeapi.UInt64Value{Value: n.TxErrors}}
		nu.Interfaces = append(nu.Interfaces, iface)
		if n.Name == def {
			nu.DefaultInterface = iface
		}
	}
	if nu.DefaultInterface == nil {
		nu.DefaultInterface = nu.Interfaces[0]
	}
	return nu
}
