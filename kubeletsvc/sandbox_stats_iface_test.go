package kubeletsvc

import (
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

// TestPodSandboxStatsDefaultInterface: the default interface (the one the
// kubelet's summary reports as the pod's network) is the pod's own, eth0,
// also when the kernel's fallback tunnel devices (tunl0, gre0, sit0...,
// made in every network namespace when their modules are loaded, before
// CNI adds eth0) come first in /proc/<pid>/net/dev.
func TestPodSandboxStatsDefaultInterface(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	e.startContainer(t, pod, "app")
	e.rt.stats[pod] = &stage0.AppStats{Timestamp: time.Now(),
		Networks: []stage0.InterfaceStats{{Name: "tunl0"}, {Name: "sit0"}, {Name: "eth0", RxBytes: 100, TxBytes: 200}}}
	r, err := e.rs.PodSandboxStats(e.ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: pod})
	if err != nil {
		t.Fatal(err)
	}
	n := r.GetStats().GetLinux().GetNetwork()
	if d := n.GetDefaultInterface(); d.GetName() != "eth0" || d.GetRxBytes().GetValue() != 100 || d.GetTxBytes().GetValue() != 200 {
		t.Errorf("default interface %v, want eth0 (rx 100, tx 200)", d)
	}
}
