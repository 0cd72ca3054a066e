package kubeletsvc

import (
	"encoding/json"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/cgstats"
	"github.com/rkt/rkt/stage0"
)

func TestContainerStatus(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	id := e.startContainer(t, pod, "app")
	app := appKey(pod, "app-0")
	shares, quota := uint64(512), int64(50000)
	e.rt.specs[app] = &specs.Spec{
		Process: &specs.Process{User: specs.User{UID: 1000, GID: 100, AdditionalGids: []uint32{100, 10}}, OOMScoreAdj: new(int)},
		Linux:   &specs.Linux{Resources: &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: &shares, Quota: &quota}}},
	}
	// the limits in force, changed since the spec was written
	e.rt.stats[app] = &stage0.AppStats{Stats: cgstats.Stats{CPUShares: 1024, CPUQuotaMicros: 20000, CPUPeriodMicros: 100000, MemoryLimit: 1 << 62}}
	r, err := e.rs.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	s := r.GetStatus()
	want := containerConfig("app", "busybox")
	if s.GetId() != id || !proto.Equal(s.GetMetadata(), want.GetMetadata()) || s.GetLabels()["ctr"] != "app" ||
		s.GetLogPath() != "/var/log/pods/web/app/0.log" || s.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("status %v", s)
	}
	if u := s.GetUser().GetLinux(); u.GetUid() != 1000 || u.GetGid() != 100 || !slices.Equal(u.GetSupplementalGroups(), []int64{100, 10}) {
		t.Errorf("user %v, want uid 1000 gid 100 groups [100 10]", u)
	}
	if res := s.GetResources().GetLinux(); res.GetCpuShares() != 1024 || res.GetCpuQuota() != 20000 || res.GetCpuPeriod() != 100000 || res.GetMemoryLimitInBytes() != 0 {
		t.Errorf("resources %v, want the live cgroup's (shares 1024, quota 20000, period 100000, no memory limit)", res)
	}
	var info map[string]any
	if err := json.Unmarshal([]byte(r.GetInfo()["info"]), &info); err != nil {
		t.Fatal(err)
	}
	if info["sandboxID"] != pod || info["app"] != "app-0" || info["runtimeSpec"] == nil {
		t.Errorf("verbose info %v", info)
	}
	_, err = e.rs.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "ffff"})
	wantCode(t, "unknown container prefix", err, codes.NotFound)
}

func TestContainerStatusExit(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	id := e.startContainer(t, pod, "app")
	for _, tc := range []struct {
		code      int
		oom       bool
		reason    string
		wantCode  int32
		wantCause string
	}{
		{0, false, "", 0, "Completed"},
		{1, false, "", 1, "Error"},
		{137, true, "", 137, "OOMKilled"},
	} {
		e.rt.mu.Lock()
		a := &e.rt.pods[pod].Apps[0]
		a.State, a.ExitCode, a.OOMKilled, a.Reason = "exited", tc.code, tc.oom, tc.reason
		e.rt.mu.Unlock()
		r, err := e.rs.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err != nil {
			t.Fatal(err)
		}
		if s := r.GetStatus(); s.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || s.GetExitCode() != tc.wantCode || s.GetReason() != tc.wantCause {
			t.Errorf("exit %d oom %v: state %v code %d reason %q, want %d %q", tc.code, tc.oom, s.GetState(), s.GetExitCode(), s.GetReason(), tc.wantCode, tc.wantCause)
		}
	}
}

// TestContainerStatusKept: the answer is kept while the container, its
// spec and the limits in force are unchanged, and made again when any
// changes (UpdateContainerResources makes stage0 read the limits again).
func TestContainerStatusKept(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	id := e.startContainer(t, pod, "app")
	app := appKey(pod, "app-0")
	e.rt.mu.Lock()
	e.rt.specs[app] = &specs.Spec{Process: &specs.Process{}, Linux: &specs.Linux{Resources: &specs.LinuxResources{}}}
	e.rt.stats[app] = &stage0.AppStats{Stats: cgstats.Stats{CPUShares: 1024}}
	e.rt.gen, e.rt.sharedPods, e.rt.sharedStats = 1, true, true
	e.rt.mu.Unlock()
	if _, err := e.rs.ListContainers(e.ctx, &runtimeapi.ListContainersRequest{}); err != nil { // the snapshot
		t.Fatal(err)
	}
	status := func(verbose bool) *runtimeapi.ContainerStatusResponse {
		t.Helper()
		r, err := e.svc.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: verbose})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := status(false)
	if again := status(false); again != first {
		t.Fatal("the answer was made again with nothing changed")
	}
	if v := status(true); v == first || v.GetInfo()["info"] == "" || first.GetInfo() != nil {
		t.Fatal("a verbose answer is the kept one, or the kept one has the verbose info")
	}

	// new limits in force: stage0 returns new stats
	if _, err := e.rs.UpdateContainerResources(e.ctx, &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: id, Linux: &runtimeapi.LinuxContainerResources{CpuShares: 2048}}); err != nil {
		t.Fatal(err)
	}
	e.rt.mu.Lock()
	e.rt.stats[app] = &stage0.AppStats{Stats: cgstats.Stats{CPUShares: 2048}}
	e.rt.mu.Unlock()
	updated := status(false)
	if updated == first || updated.GetStatus().GetResources().GetLinux().GetCpuShares() != 2048 {
		t.Fatalf("after an update: cpu shares %d, want 2048", updated.GetStatus().GetResources().GetLinux().GetCpuShares())
	}

	// the container exits: a new status of its pod
	e.rt.mu.Lock()
	e.rt.pods[pod].Apps[0].State, e.rt.pods[pod].Apps[0].ExitCode = "exited", 2
	e.rt.mu.Unlock()
	if s := status(false).GetStatus(); s.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || s.GetExitCode() != 2 {
		t.Fatalf("after its exit: state %v code %d, want exited 2", s.GetState(), s.GetExitCode())
	}
}

// TestContainerStatusUnreadableSibling: an app of the pod whose CRI config
// cannot be decoded fails its own lookups only, not its siblings'.
func TestContainerStatusUnreadableSibling(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	good := e.startContainer(t, pod, "good")
	bad := e.startContainer(t, pod, "bad")
	e.breakConfig(pod, bad)
	if r, err := e.rs.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: good}); err != nil || r.GetStatus().GetId() != good {
		t.Fatalf("ContainerStatus of the readable sibling: %v, %v", r, err)
	}
	if _, err := e.rs.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: bad}); err == nil || status.Code(err) == codes.NotFound {
		t.Fatalf("ContainerStatus of the unreadable container: %v; want an error other than NotFound", err)
	}
}
