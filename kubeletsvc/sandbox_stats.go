package kubeletsvc

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/schema"
)

// PodSandboxStats returns the resource usage of a sandbox and its
// containers.
func (c *criService) PodSandboxStats(ctx context.Context, r *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	s, err := c.getSandbox(ctx, r.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	st, err := c.sandboxStats(ctx, s)
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

// StreamPodSandboxStats is ListPodSandboxStats in batches of streamBatch.
func (c *criService) StreamPodSandboxStats(r *runtimeapi.StreamPodSandboxStatsRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxStatsResponse]) error {
	stats, err := c.listSandboxStats(stream.Context(), r.GetFilter())
	if err != nil {
		return err
	}
	for len(stats) > 0 {
		n := min(len(stats), streamBatch)
		if err := stream.Send(&runtimeapi.StreamPodSandboxStatsResponse{PodSandboxStats: stats[:n]}); err != nil {
			return err
		}
		stats = stats[n:]
	}
	return nil
}

func (c *criService) listSandboxStats(ctx context.Context, f *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	sbs, err := c.listSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	var sel []*sandbox
	for _, s := range sbs {
		if f.GetId() != "" && !strings.HasPrefix(s.ID(), f.GetId()) {
			continue
		}
		if !matchLabels(s.cfg.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		sel = append(sel, s)
	}
	out := make([]*runtimeapi.PodSandboxStats, len(sel))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(statsParallelism)
	for i, s := range sel {
		g.Go(func() error {
			st, err := c.sandboxStats(gctx, s)
			out[i] = st
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// sandboxStats sums the usage of a sandbox's apps (from stage1) and reads
// its network counters from a running app's network namespace.
func (c *criService) sandboxStats(ctx context.Context, s *sandbox) (*runtimeapi.PodSandboxStats, error) {
	out := &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{
			Id: s.ID(), Metadata: s.cfg.GetMetadata(), Labels: s.cfg.GetLabels(), Annotations: s.cfg.GetAnnotations(),
		},
		Linux: &runtimeapi.LinuxPodSandboxStats{},
	}
	if !s.ready() {
		return out, nil
	}
	ps, err := c.rt.PodStats(ctx, s.ID())
	if err != nil {
		if isNotFound(err) {
			return out, nil
		}
		return nil, fmt.Errorf("cannot read the stats of pod sandbox %s: %w", s.ID(), err)
	}
	out.Linux.Cpu, out.Linux.Memory = c.usage(s.ID(), ps)
	out.Linux.Process = &runtimeapi.ProcessUsage{Timestamp: ps.Timestamp.UnixNano(), ProcessCount: &runtimeapi.UInt64Value{Value: ps.Pids}}
	ctrs, err := s.containers()
	if err != nil {
		return nil, err
	}
	for _, ct := range ctrs {
		cs, err := c.containerStats(ctx, ct)
		if err != nil {
			return nil, err
		}
		out.Linux.Containers = append(out.Linux.Containers, cs)
		if out.Linux.Network == nil && ct.app.State == schema.AppRunning && ct.app.Pid > 0 &&
			s.cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() != runtimeapi.NamespaceMode_NODE {
			out.Linux.Network = networkUsage(ct.app.Pid)
		}
	}
	return out, nil
}

// netDevPackets reads the packet counters of the network namespace of pid:
// interface -> rx packets, rx dropped, tx packets, tx dropped.
func netDevPackets(pid int) map[string][4]uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/dev", pid))
	if err != nil {
		return nil
	}
	out := map[string][4]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		fl := strings.Fields(rest)
		if !ok || len(fl) < 16 {
			continue
		}
		var v [4]uint64
		for i, f := range []int{1, 3, 9, 11} {
			v[i], _ = strconv.ParseUint(fl[f], 10, 64)
		}
		out[strings.TrimSpace(name)] = v
	}
	return out
}

// networkUsage reads the interface counters of the network namespace of
// pid from /proc/<pid>/net/dev (loopback excluded).
func networkUsage(pid int) *runtimeapi.NetworkUsage {
	f, err := os.Open(fmt.Sprintf("/proc/%d/net/dev", pid))
	if err != nil {
		return nil
	}
	defer f.Close()
	nu := &runtimeapi.NetworkUsage{Timestamp: time.Now().UnixNano()}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		name = strings.TrimSpace(name)
		fl := strings.Fields(rest)
		if name == "lo" || len(fl) < 16 {
			continue
		}
		n := func(i int) *runtimeapi.UInt64Value {
			v, _ := strconv.ParseUint(fl[i], 10, 64)
			return &runtimeapi.UInt64Value{Value: v}
		}
		iface := &runtimeapi.NetworkInterfaceUsage{Name: name, RxBytes: n(0), RxErrors: n(2), TxBytes: n(8), TxErrors: n(10)}
		nu.Interfaces = append(nu.Interfaces, iface)
		if nu.DefaultInterface == nil {
			nu.DefaultInterface = iface
		}
	}
	return nu
}
