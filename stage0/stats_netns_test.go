package stage0

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

// TestPodStatsNetworkWithoutRunningApp: a running pod none of whose apps
// runs (a sandbox before its first container, or after its containers
// exited) still has the counters of its network namespace's interfaces,
// read inside that namespace, and no thread of the process is left in it.
func TestPodStatsNetworkWithoutRunningApp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces")
	}
	rt := newTestRuntime(t)
	p := runningAppPod(t, rt, os.Getpid())
	now := time.Now()
	st := &schema.AppStatus{Name: "app", State: schema.AppExited, CreatedAt: now, StartedAt: now, FinishedAt: now}
	if err := control.WriteAppStatus(p.dir, st); err != nil {
		t.Fatal(err)
	}
	// an interface only the pod's namespace has (a veth whose peer is
	// there too), which sends 3 packets
	const iface = "rktpod0"
	netns := p.layout().NetNS()
	newBoundNetNS(t, netns)
	inNetNS(t, netns, "ip", "link", "add", iface, "type", "veth", "peer", "name", "rktpod1")
	inNetNS(t, netns, "ip", "addr", "add", "10.254.0.1/24", "dev", iface)
	inNetNS(t, netns, "ip", "link", "set", "rktpod1", "up")
	inNetNS(t, netns, "ip", "link", "set", iface, "up")
	inNetNS(t, netns, "ip", "neigh", "add", "10.254.0.2", "lladdr", "02:00:00:00:00:02", "dev", iface)
	inNetNS(t, netns, "bash", "-c", "for i in 1 2 3; do echo x > /dev/udp/10.254.0.2/9; done")
	hostNS, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}

	for i := 0; i < 20; i++ {
		s, err := rt.PodStats(context.Background(), p.uuid)
		if err != nil {
			t.Fatalf("PodStats of a running pod whose app exited: %v", err)
		}
		var got *InterfaceStats
		for j := range s.Networks {
			if s.Networks[j].Name == iface {
				got = &s.Networks[j]
			}
		}
		if got == nil || got.TxPackets < 3 {
			t.Fatalf("PodStats of a running pod whose app exited: interfaces %+v; want %s with at least 3 packets sent", s.Networks, iface)
		}
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		ns, err := os.Readlink("/proc/self/task/" + task.Name() + "/ns/net")
		if err == nil && ns != hostNS {
			t.Errorf("thread %s is left in network namespace %s, not the process's %s", task.Name(), ns, hostNS)
		}
	}
}

// newBoundNetNS makes a network namespace bound at path, as networking
// does at a pod's setup, until the test ends.
func newBoundNetNS(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("unshare", "--net="+path, "true").CombinedOutput(); err != nil {
		t.Fatalf("cannot make a network namespace at %s: %v: %s", path, err, out)
	}
	t.Cleanup(func() { unix.Unmount(path, unix.MNT_DETACH) })
}

// inNetNS runs a command in the network namespace bound at path.
func inNetNS(t *testing.T, path string, args ...string) {
	t.Helper()
	out, err := exec.Command("nsenter", append([]string{"--net=" + path}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v in %s: %v: %s", args, filepath.Base(path), err, out)
	}
}
