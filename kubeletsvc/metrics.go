package kubeletsvc

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/cgstats"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage0"
)

// The CRI metrics are the cadvisor metrics the kubelet exports, computed
// from each running container's cgroup, processes and writable layer.

// baseLabels are the labels of every container metric (cadvisor's).
var baseLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

// sample is one value of a metric with its extra label values.
type sample struct {
	extra []string
	value uint64
}

// metricDef defines one metric: its help, extra labels and how to compute
// it from a container's figures.
type metricDef struct {
	name, help string
	gauge      bool
	extra      []string
	value      func(m *ctrMetrics) []sample
}

// ctrMetrics are the figures a container's metrics are computed from.
type ctrMetrics struct {
	cg      *cgstats.Stats
	started time.Time
	fsUsed  uint64 // bytes in the writable layer
	fsStat  *syscall.Statfs_t
	fsDev   string
	net     []stage0.InterfaceStats // the pod's
	nofile  *uint64                 // soft RLIMIT_NOFILE of the container's first process
}

func one(v uint64) []sample { return []sample{{value: v}} }

// softNofile reads the soft "Max open files" of pid from /proc/<pid>/limits.
func softNofile(pid int) *uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return nil
	}
	for _, l := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(l, "Max open files")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return nil
		}
		return &v
	}
	return nil
}

func secs(ns uint64) uint64 { return ns / 1e9 }

var metricDefs = []metricDef{
	{"container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", false, nil, func(m *ctrMetrics) []sample { return one(secs(m.cg.CPUUsageNanos)) }},
	{"container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.", false, nil, func(m *ctrMetrics) []sample { return one(secs(m.cg.CPUUserNanos)) }},
	{"container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.", false, nil, func(m *ctrMetrics) []sample { return one(secs(m.cg.CPUSystemNanos)) }},
	{"container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.", false, nil, func(m *ctrMetrics) []sample { return one(m.cg.CFSPeriods) }},
	{"container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.", false, nil, func(m *ctrMetrics) []sample { return one(m.cg.CFSThrottledPeriods) }},
	{"container_cpu_cfs_throttled_seconds_total", "Total time duration the container has been throttled.", false, nil, func(m *ctrMetrics) []sample { return one(secs(m.cg.CFSThrottledNanos)) }},
	{"container_spec_cpu_period", "CPU period of the container.", true, nil, func(m *ctrMetrics) []sample { return one(m.cg.CPUPeriodMicros) }},
	{"container_spec_cpu_quota", "CPU quota of the container.", true, nil, func(m *ctrMetrics) []sample {
		if m.cg.CPUQuotaMicros <= 0 {
			return nil
		}
		return one(uint64(m.cg.CPUQuotaMicros))
	}},
	{"container_spec_cpu_shares", "CPU share of the container.", true, nil, func(m *ctrMetrics) []sample { return one(m.cg.CPUShares) }},
	{"container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed.", true, nil, func(m *ctrMetrics) []sample { return one(m.cg.MemoryUsage) }},
	{"container_memory_working_set_bytes", "Current working set in bytes.", true, nil, func(m *ctrMetrics) []sample { return one(m.cg.MemoryWorkingSet) }},
	{"container_memory_max_usage_bytes", "Maximum memory usage recorded in bytes.", true, nil, func(m *ctrMetrics) []sample { return one(m.cg.MemoryMaxUsage) }},
	{"container_memory_cache", "Number of bytes of page cache memory.", true, nil, func(m *ctrMetrics) []sample { return one(m.cg.MemoryCache) }},
	{"container_memory_rss", "Size of RSS in bytes.", true, nil, func(m *ctrMetrics) []sample { return one(m.cg.MemoryRSS) }},
	{"container_memory_mapped_file", "Size of memory mapped files in bytes.", true, nil, func(m *ctrMetrics) []sample { return one(m.cg.MemoryMappedFile) }},
	{"container_memory_swap", "Container swap usage in bytes.", true, nil, func(m *ctrMetrics) []sample { return one(m.cg.MemorySwap) }},
	{"container_memory_kernel_usage", "Size of kernel memory allocated in bytes.", true, nil, func(m *ctrMetrics) []sample { return one(m.cg.MemoryKernel) }},
	{"container_memory_failcnt", "Number of memory usage hits limits.", false, nil, func(m *ctrMetrics) []sample { return one(m.cg.MemoryFailcnt) }},
	{"container_memory_failures_total", "Cumulative count of memory allocation failures.", false, []string{"failure_type", "scope"}, func(m *ctrMetrics) []sample {
		return []sample{{[]string{"pgfault", "container"}, m.cg.MemoryPgFault}, {[]string{"pgmajfault", "container"}, m.cg.MemoryPgMajFault}}
	}},
	{"container_spec_memory_limit_bytes", "Memory limit for the container.", true, nil, func(m *ctrMetrics) []sample { return one(m.cg.MemoryLimit) }},
	{"container_spec_memory_reservation_limit_bytes", "Memory reservation limit for the container.", true, nil, func(m *ctrMetrics) []sample { return one(uint64(limit(m.cg.MemoryReservation))) }},
	{"container_memory_events_high_total", "Number of times the container's memory usage went over its high boundary (cgroup v2).", false, nil, func(m *ctrMetrics) []sample { return one(m.cg.MemoryHighEvents) }},
	{"container_memory_events_max_total", "Number of times the container's memory usage was about to go over its limit.", false, nil, func(m *ctrMetrics) []sample { return one(m.cg.MemoryFailcnt) }},
	{"container_ulimits_soft", "Soft ulimit values for the container root process. Unlimited if -1, except priority and nice", true, []string{"ulimit"}, func(m *ctrMetrics) []sample {
		if m.nofile == nil {
			return nil
		}
		return []sample{{[]string{"max_open_files"}, *m.nofile}}
	}},
	{"container_spec_memory_swap_limit_bytes", "Memory swap limit for the container.", true, nil, func(m *ctrMetrics) []sample { return one(m.cg.MemorySwapLimit) }},
	{"container_oom_events_total", "Count of out of memory events observed for the container.", false, nil, func(m *ctrMetrics) []sample { return one(m.cg.OOMKills) }},
	// processes as cAdvisor counts them: the cgroup's cgroup.procs (its
	// pids.current counts threads: container_threads)
	{"container_processes", "Number of processes running inside the container.", true, nil, func(m *ctrMetrics) []sample { return one(uint64(len(m.cg.Pids))) }},
	{"container_threads", "Number of threads running inside the container.", true, nil, func(m *ctrMetrics) []sample { return one(m.cg.Threads) }},
	{"container_threads_max", "Maximum number of threads allowed inside the container, 0 for unlimited.", true, nil, func(m *ctrMetrics) []sample { return one(m.cg.ThreadsMax) }},
	{"container_file_descriptors", "Number of open file descriptors for the container.", true, nil, func(m *ctrMetrics) []sample { return one(m.cg.FileDescriptors) }},
	{"container_sockets", "Number of open sockets for the container.", true, nil, func(m *ctrMetrics) []sample { return one(m.cg.Sockets) }},
	{"container_start_time_seconds", "Start time of the container since unix epoch in seconds.", true, nil, func(m *ctrMetrics) []sample { return one(uint64(m.started.Unix())) }},
	{"container_last_seen", "Last time a container was seen by the exporter.", true, nil, func(m *ctrMetrics) []sample { return one(uint64(time.Now().Unix())) }},
	{"container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", true, []string{"device"}, func(m *ctrMetrics) []sample { return []sample{{[]string{m.fsDev}, m.fsUsed}} }},
	{"container_fs_limit_bytes", "Number of bytes that can be consumed by the container on this filesystem.", true, []string{"device"}, func(m *ctrMetrics) []sample {
		if m.fsStat == nil {
			return nil
		}
		return []sample{{[]string{m.fsDev}, m.fsStat.Blocks * uint64(m.fsStat.Bsize)}}
	}},
	// critest's metrics specs require the inode figures of the container's
	// filesystem (the writable layer's, as statfs gives them).
	{"container_fs_inodes_total", "Number of Inodes.", true, []string{"device"}, func(m *ctrMetrics) []sample {
		if m.fsStat == nil {
			return nil
		}
		return []sample{{[]string{m.fsDev}, m.fsStat.Files}}
	}},
	{"container_fs_inodes_free", "Number of available Inodes.", true, []string{"device"}, func(m *ctrMetrics) []sample {
		if m.fsStat == nil {
			return nil
		}
		return []sample{{[]string{m.fsDev}, m.fsStat.Ffree}}
	}},
	{"container_fs_reads_bytes_total", "Cumulative count of bytes read.", false, []string{"device"}, blkio(true, "Read")},
	{"container_fs_writes_bytes_total", "Cumulative count of bytes written.", false, []string{"device"}, blkio(true, "Write")},
	{"container_fs_reads_total", "Cumulative count of reads completed.", false, []string{"device"}, blkio(false, "Read")},
	{"container_fs_writes_total", "Cumulative count of writes completed.", false, []string{"device"}, blkio(false, "Write")},
	{"container_blkio_device_usage_total", "Blkio device bytes usage.", false, []string{"device", "major", "minor", "operation"}, func(m *ctrMetrics) []sample {
		var out []sample
		for dev, ops := range m.cg.BlkioBytes {
			maj, min, _ := strings.Cut(dev, ":")
			for op, v := range ops {
				out = append(out, sample{[]string{dev, maj, min, op}, v})
			}
		}
		return out
	}},
	{"container_network_receive_bytes_total", "Cumulative count of bytes received.", false, []string{"interface"}, netStat(func(i *stage0.InterfaceStats) uint64 { return i.RxBytes })},
	{"container_network_receive_errors_total", "Cumulative count of errors encountered while receiving.", false, []string{"interface"}, netStat(func(i *stage0.InterfaceStats) uint64 { return i.RxErrors })},
	{"container_network_receive_packets_total", "Cumulative count of packets received.", false, []string{"interface"}, netStat(func(i *stage0.InterfaceStats) uint64 { return i.RxPackets })},
	{"container_network_receive_packets_dropped_total", "Cumulative count of packets dropped while receiving.", false, []string{"interface"}, netStat(func(i *stage0.InterfaceStats) uint64 { return i.RxDropped })},
	{"container_network_transmit_bytes_total", "Cumulative count of bytes transmitted.", false, []string{"interface"}, netStat(func(i *stage0.InterfaceStats) uint64 { return i.TxBytes })},
	{"container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting.", false, []string{"interface"}, netStat(func(i *stage0.InterfaceStats) uint64 { return i.TxErrors })},
	{"container_network_transmit_packets_total", "Cumulative count of packets transmitted.", false, []string{"interface"}, netStat(func(i *stage0.InterfaceStats) uint64 { return i.TxPackets })},
	{"container_network_transmit_packets_dropped_total", "Cumulative count of packets dropped while transmitting.", false, []string{"interface"}, netStat(func(i *stage0.InterfaceStats) uint64 { return i.TxDropped })},
}

func blkio(bytes bool, op string) func(m *ctrMetrics) []sample {
	return func(m *ctrMetrics) []sample {
		src := m.cg.BlkioOps
		if bytes {
			src = m.cg.BlkioBytes
		}
		var out []sample
		for dev, ops := range src {
			out = append(out, sample{[]string{dev}, ops[op]})
		}
		return out
	}
}

func netStat(f func(*stage0.InterfaceStats) uint64) func(m *ctrMetrics) []sample {
	return func(m *ctrMetrics) []sample {
		var out []sample
		for i := range m.net {
			out = append(out, sample{[]string{m.net[i].Name}, f(&m.net[i])})
		}
		return out
	}
}

// ListMetricDescriptors describes the metrics ListPodSandboxMetrics returns.
func (c *criService) ListMetricDescriptors(ctx context.Context, r *runtimeapi.ListMetricDescriptorsRequest) (*runtimeapi.ListMetricDescriptorsResponse, error) {
	out := &runtimeapi.ListMetricDescriptorsResponse{}
	for _, d := range metricDefs {
		out.Descriptors = append(out.Descriptors, &runtimeapi.MetricDescriptor{
			Name: d.name, Help: d.help, LabelKeys: append(append([]string{}, baseLabels...), d.extra...),
		})
	}
	return out, nil
}

// ListPodSandboxMetrics returns the metrics of every ready sandbox's
// running containers.
func (c *criService) ListPodSandboxMetrics(ctx context.Context, r *runtimeapi.ListPodSandboxMetricsRequest) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
	pms, err := c.podSandboxMetrics(ctx)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListPodSandboxMetricsResponse{PodMetrics: pms}, nil
}

// StreamPodSandboxMetrics is ListPodSandboxMetrics in batches (sendBatches).
func (c *criService) StreamPodSandboxMetrics(r *runtimeapi.StreamPodSandboxMetricsRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxMetricsResponse]) error {
	pms, err := c.podSandboxMetrics(stream.Context())
	if err != nil {
		return err
	}
	return sendBatches(stream, pms, func(b []*runtimeapi.PodSandboxMetrics) *runtimeapi.StreamPodSandboxMetricsResponse {
		return &runtimeapi.StreamPodSandboxMetricsResponse{PodSandboxMetrics: b}
	})
}

func (c *criService) podSandboxMetrics(ctx context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
	sbs, err := c.listSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	var out []*runtimeapi.PodSandboxMetrics
	for _, s := range sbs {
		if !s.ready() {
			continue
		}
		pm := &runtimeapi.PodSandboxMetrics{PodSandboxId: s.ID()}
		for _, ct := range s.containers() {
			if ct.app.State != schema.AppRunning {
				continue
			}
			ms, err := c.containerMetrics(ctx, ct)
			if err != nil {
				c.log.Debug("no metrics for container", "container", ct.id, "error", err)
				continue
			}
			pm.ContainerMetrics = append(pm.ContainerMetrics, &runtimeapi.ContainerMetrics{ContainerId: ct.id, Metrics: ms})
		}
		out = append(out, pm)
	}
	return out, nil
}

// containerMetrics computes every metric of a running container.
func (c *criService) containerMetrics(ctx context.Context, ct *container) ([]*runtimeapi.Metric, error) {
	s, err := c.rt.AppStats(ctx, ct.sb.ID(), ct.app.App.Name)
	if err != nil {
		return nil, err
	}
	u := s.WritableLayer
	m := &ctrMetrics{cg: &s.Stats, started: ct.app.StartedAt, fsUsed: u.Bytes, fsStat: u.Statfs, fsDev: u.Device}
	if len(s.Pids) > 0 {
		m.nofile = softNofile(s.Pids[0])
	}
	if ps, err := c.rt.PodStats(ctx, ct.sb.ID()); err == nil {
		m.net = ps.Networks
	}
	ts := time.Now().UnixNano()
	sb := ct.sb.cfg.GetMetadata()
	base := []string{ct.cfg.GetMetadata().GetName(), ct.id, ct.app.App.Annotations[annoImage], ct.app.App.Name, sb.GetNamespace(), sb.GetName()}
	var out []*runtimeapi.Metric
	for _, d := range metricDefs {
		typ := runtimeapi.MetricType_COUNTER
		if d.gauge {
			typ = runtimeapi.MetricType_GAUGE
		}
		samples := d.value(m)
		sort.Slice(samples, func(i, j int) bool { return lessStrings(samples[i].extra, samples[j].extra) })
		for _, s := range samples {
			out = append(out, &runtimeapi.Metric{
				Name: d.name, Timestamp: ts, MetricType: typ,
				LabelValues: append(append([]string{}, base...), s.extra...),
				Value:       &runtimeapi.UInt64Value{Value: s.value},
			})
		}
	}
	return out, nil
}

func lessStrings(a, b []string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}
