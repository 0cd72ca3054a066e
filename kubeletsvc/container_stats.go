package kubeletsvc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/cgstats"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage0"
)

// ContainerStats returns the resource usage of one container.
func (c *criService) ContainerStats(ctx context.Context, r *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	ct, err := c.getContainer(ctx, r.GetContainerId())
	if err != nil {
		return nil, err
	}
	st, err := c.containerStats(ctx, ct)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatsResponse{Stats: st}, nil
}

// ListContainerStats returns the resource usage of the containers a filter
// selects.
func (c *criService) ListContainerStats(ctx context.Context, r *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	stats, err := c.listContainerStats(ctx, r.GetFilter())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListContainerStatsResponse{Stats: stats}, nil
}

// StreamContainerStats is ListContainerStats in batches (sendBatches).
func (c *criService) StreamContainerStats(r *runtimeapi.StreamContainerStatsRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamContainerStatsResponse]) error {
	stats, err := c.listContainerStats(stream.Context(), r.GetFilter())
	if err != nil {
		return err
	}
	return sendBatches(stream, stats, func(b []*runtimeapi.ContainerStats) *runtimeapi.StreamContainerStatsResponse {
		return &runtimeapi.StreamContainerStatsResponse{ContainerStats: b}
	})
}

func (c *criService) listContainerStats(ctx context.Context, f *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	ctrs, err := c.filteredContainers(ctx, &runtimeapi.ContainerFilter{
		Id: f.GetId(), PodSandboxId: f.GetPodSandboxId(), LabelSelector: f.GetLabelSelector(),
	})
	if err != nil {
		return nil, err
	}
	// one after the other: stage0 answers from its stats cache (a lookup),
	// where goroutines cost more than they saved
	out := make([]*runtimeapi.ContainerStats, 0, len(ctrs))
	for _, ct := range ctrs {
		st, err := c.containerStats(ctx, ct)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// containerStats reads a container's usage from stage1; a container that
// does not run reports its attributes and no usage. The answer is shared
// (kept while stage0 returns the same stats): read-only.
func (c *criService) containerStats(ctx context.Context, ct *container) (*runtimeapi.ContainerStats, error) {
	if ct.app.State != schema.AppRunning || !ct.sb.ready() {
		if k := ct.kept.Load(); k != nil && k.src == nil {
			return k.item, nil
		}
		out := ct.statsItem()
		ct.kept.Store(&keptStats[runtimeapi.ContainerStats]{item: out})
		return out, nil
	}
	s, err := c.rt.AppStats(ctx, ct.sb.ID(), ct.app.App.Name)
	if err != nil {
		if isNotFound(err) || errors.Is(err, stage0.ErrNotRunning) {
			return ct.statsItem(), nil // exited meanwhile
		}
		return nil, fmt.Errorf("cannot read the stats of container %s: %w", ct.id, err)
	}
	if k := ct.kept.Load(); k != nil && k.src == s {
		return k.item, nil
	}
	out := ct.statsItem()
	out.Cpu, out.Memory = c.usage(ct.id, s)
	out.Io = ioUsage(s)
	out.WritableLayer = &runtimeapi.FilesystemUsage{
		Timestamp:  s.Timestamp.UnixNano(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: s.WritableLayer.Mountpoint},
		UsedBytes:  &runtimeapi.UInt64Value{Value: s.WritableLayer.Bytes},
		InodesUsed: &runtimeapi.UInt64Value{Value: s.WritableLayer.Inodes},
	}
	out.Swap = &runtimeapi.SwapUsage{Timestamp: s.Timestamp.UnixNano(), SwapUsageBytes: &runtimeapi.UInt64Value{Value: s.MemorySwap}}
	ct.kept.Store(&keptStats[runtimeapi.ContainerStats]{src: s, item: out})
	return out, nil
}

// usage converts stage0 stats to CRI's cpu and memory usage.
func (c *criService) usage(key string, s *stage0.AppStats) (*runtimeapi.CpuUsage, *runtimeapi.MemoryUsage) {
	ts := s.Timestamp.UnixNano()
	v := make([]runtimeapi.UInt64Value, 8) // one allocation for the values
	val := func(i int, x uint64) *runtimeapi.UInt64Value { v[i].Value = x; return &v[i] }
	cpu := &runtimeapi.CpuUsage{
		Timestamp:            ts,
		UsageCoreNanoSeconds: val(0, s.CPUUsageNanos),
		UsageNanoCores:       val(1, c.stats.rate(key, s.Timestamp, s.CPUUsageNanos)),
	}
	mem := &runtimeapi.MemoryUsage{
		Timestamp:       ts,
		WorkingSetBytes: val(2, s.MemoryWorkingSet),
		UsageBytes:      val(3, s.MemoryUsage),
		RssBytes:        val(4, s.MemoryRSS),
		PageFaults:      val(5, s.MemoryPgFault),
		MajorPageFaults: val(6, s.MemoryPgMajFault),
	}
	if s.MemoryLimit > 0 && s.MemoryLimit < unlimited && s.MemoryLimit > s.MemoryWorkingSet {
		mem.AvailableBytes = val(7, s.MemoryLimit-s.MemoryWorkingSet)
	}
	cpu.Psi, mem.Psi = psiStats(s.CPUPressure), psiStats(s.MemoryPressure)
	return cpu, mem
}

// ioUsage is the CRI's I/O usage (pressure only); nil without PSI.
func ioUsage(s *stage0.AppStats) *runtimeapi.IoUsage {
	if s.IOPressure == nil {
		return nil
	}
	return &runtimeapi.IoUsage{Timestamp: s.Timestamp.UnixNano(), Psi: psiStats(s.IOPressure)}
}

// psiStats converts a cgroup pressure file to the CRI's; nil stays nil.
func psiStats(p *cgstats.PSI) *runtimeapi.PsiStats {
	if p == nil {
		return nil
	}
	data := func(d cgstats.PSIData) *runtimeapi.PsiData {
		return &runtimeapi.PsiData{Total: d.Total, Avg10: d.Avg10, Avg60: d.Avg60, Avg300: d.Avg300}
	}
	return &runtimeapi.PsiStats{Full: data(p.Full), Some: data(p.Some)}
}

// cpuSampler remembers the last CPU sample of each container (or pod) to
// compute usage in nano cores between two calls, as cadvisor does.
type cpuSampler struct {
	mu   sync.Mutex
	last map[string]cpuSample
}

type cpuSample struct {
	at    time.Time
	usage uint64
	rate  uint64 // since the sample before
}

func newCPUSampler() *cpuSampler { return &cpuSampler{last: map[string]cpuSample{}} }

// rate records a sample and returns the usage rate since the previous one
// (0 for the first); the same sample again (stats are cached between
// refreshes) gives the same rate.
func (s *cpuSampler) rate(key string, at time.Time, usage uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, ok := s.last[key]
	if ok && at.Equal(prev.at) {
		return prev.rate
	}
	cur := cpuSample{at: at, usage: usage}
	if ok && at.After(prev.at) && usage >= prev.usage {
		cur.rate = uint64(float64(usage-prev.usage) / at.Sub(prev.at).Seconds())
	}
	s.last[key] = cur
	return cur.rate
}

func (s *cpuSampler) forget(key string) {
	s.mu.Lock()
	delete(s.last, key)
	s.mu.Unlock()
}

// forgetMatching forgets the samples of the keys that match.
func (s *cpuSampler) forgetMatching(match func(key string) bool) {
	s.mu.Lock()
	maps.DeleteFunc(s.last, func(k string, _ cpuSample) bool { return match(k) })
	s.mu.Unlock()
}
