package kubeletsvc

import (
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/cgstats"
	"github.com/rkt/rkt/stage0"
)

func TestListPodSandboxMetrics(t *testing.T) {
	e := newTestEnv(t)
	pod, stopped := e.runPod(t, "web"), e.runPod(t, "stopped")
	running := e.startContainer(t, pod, "run")
	e.createContainer(t, pod, "new") // not running: no metrics
	if _, err := e.rs.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: stopped}); err != nil {
		t.Fatal(err)
	}
	e.rt.stats[appKey(pod, "run-0")] = &stage0.AppStats{Timestamp: time.Now(),
		Stats: cgstats.Stats{CPUUsageNanos: 3e9, MemoryWorkingSet: 4096, BlkioBytes: map[string]map[string]uint64{"8:0": {"Read": 10, "Write": 20}}}}
	e.rt.stats[pod] = &stage0.AppStats{Networks: []stage0.InterfaceStats{{Name: "eth0", RxBytes: 99}}}
	r, err := e.rs.ListPodSandboxMetrics(e.ctx, &runtimeapi.ListPodSandboxMetricsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.GetPodMetrics()) != 1 || r.GetPodMetrics()[0].GetPodSandboxId() != pod {
		t.Fatalf("pod metrics %v, want only the ready sandbox %s", r.GetPodMetrics(), pod)
	}
	cms := r.GetPodMetrics()[0].GetContainerMetrics()
	if len(cms) != 1 || cms[0].GetContainerId() != running {
		t.Fatalf("container metrics of %v, want only the running %s", cms, running)
	}
	find := func(name string, extra ...string) *runtimeapi.Metric {
		for _, m := range cms[0].GetMetrics() {
			if m.GetName() == name && slices.Equal(m.GetLabelValues()[len(baseLabels):], extra) {
				return m
			}
		}
		t.Fatalf("no metric %s %v", name, extra)
		return nil
	}
	cpu := find("container_cpu_usage_seconds_total")
	if cpu.GetValue().GetValue() != 3 || cpu.GetMetricType() != runtimeapi.MetricType_COUNTER {
		t.Errorf("cpu metric %v, want a counter of 3 s", cpu)
	}
	// base labels: container, id, image, name, namespace, pod
	if l := cpu.GetLabelValues(); l[0] != "run" || l[1] != running || l[3] != "run-0" || l[4] != "default" || l[5] != "web" {
		t.Errorf("labels %v", l)
	}
	if m := find("container_memory_working_set_bytes"); m.GetValue().GetValue() != 4096 || m.GetMetricType() != runtimeapi.MetricType_GAUGE {
		t.Errorf("working set metric %v", m)
	}
	if m := find("container_fs_writes_bytes_total", "8:0"); m.GetValue().GetValue() != 20 {
		t.Errorf("blkio write metric %v", m)
	}
	if m := find("container_network_receive_bytes_total", "eth0"); m.GetValue().GetValue() != 99 {
		t.Errorf("network metric %v, want the pod's eth0 counters", m)
	}
	d, err := e.rs.ListMetricDescriptors(e.ctx, &runtimeapi.ListMetricDescriptorsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.GetDescriptors()) != len(metricDefs) {
		t.Errorf("%d descriptors, want %d", len(d.GetDescriptors()), len(metricDefs))
	}
	for _, desc := range d.GetDescriptors() {
		if !slices.Equal(desc.GetLabelKeys()[:len(baseLabels)], baseLabels) {
			t.Errorf("%s: label keys %v do not start with %v", desc.GetName(), desc.GetLabelKeys(), baseLabels)
		}
	}
}
