package kubeletsvc

import (
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/cgstats"
	"github.com/rkt/rkt/stage0"
)

func TestPodSandboxStats(t *testing.T) {
	e := newTestEnv(t)
	pod, stopped := e.runPod(t, "web"), e.runPod(t, "stopped")
	ctr := e.startContainer(t, pod, "app")
	if _, err := e.rs.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: stopped}); err != nil {
		t.Fatal(err)
	}
	e.rt.stats[pod] = &stage0.AppStats{Timestamp: time.Now(), Stats: cgstats.Stats{CPUUsageNanos: 7, Processes: 3},
		Networks: []stage0.InterfaceStats{{Name: "eth0", RxBytes: 100, TxBytes: 200}, {Name: "eth1", RxBytes: 1}}}
	r, err := e.rs.PodSandboxStats(e.ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: pod})
	if err != nil {
		t.Fatal(err)
	}
	l := r.GetStats().GetLinux()
	if r.GetStats().GetAttributes().GetId() != pod || l.GetCpu().GetUsageCoreNanoSeconds().GetValue() != 7 || l.GetProcess().GetProcessCount().GetValue() != 3 {
		t.Errorf("stats %v", r.GetStats())
	}
	n := l.GetNetwork()
	if len(n.GetInterfaces()) != 2 || n.GetDefaultInterface().GetName() != "eth0" || n.GetDefaultInterface().GetRxBytes().GetValue() != 100 ||
		n.GetDefaultInterface().GetTxBytes().GetValue() != 200 {
		t.Errorf("network %v, want eth0 (default) and eth1", n)
	}
	if cs := l.GetContainers(); len(cs) != 1 || cs[0].GetAttributes().GetId() != ctr {
		t.Errorf("container stats %v, want %s's", cs, ctr)
	}
	list, err := e.rs.ListPodSandboxStats(e.ctx, &runtimeapi.ListPodSandboxStatsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.GetStats()) != 2 {
		t.Fatalf("%d sandbox stats, want 2", len(list.GetStats()))
	}
	for _, s := range list.GetStats() {
		if s.GetAttributes().GetId() == stopped && (s.GetLinux().GetCpu() != nil || s.GetLinux().GetNetwork() != nil) {
			t.Errorf("a stopped sandbox has usage: %v", s)
		}
	}
	list, err = e.rs.ListPodSandboxStats(e.ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: &runtimeapi.PodSandboxStatsFilter{LabelSelector: map[string]string{"app": "stopped"}}})
	if err != nil || len(list.GetStats()) != 1 || list.GetStats()[0].GetAttributes().GetId() != stopped {
		t.Errorf("filtered by label: %v, %v", list.GetStats(), err)
	}
}
