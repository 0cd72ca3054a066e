package cgstats

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func write(t *testing.T, root, rel, body string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fakeV2Root makes Root a temporary pure cgroup v2 hierarchy for the test.
func fakeV2Root(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	old := Root
	Root = root
	t.Cleanup(func() { Root = old })
	write(t, root, "cgroup.controllers", "cpu memory pids io\n")
	return root
}

func TestReadV1(t *testing.T) {
	root := t.TempDir()
	old := Root
	Root = root
	t.Cleanup(func() { Root = old })
	cg := "/pod/app"
	write(t, root, "pids"+cg+"/cgroup.procs", "1\n2\n")
	write(t, root, "pids"+cg+"/pids.current", "2\n")
	write(t, root, "pids"+cg+"/pids.max", "max\n")
	write(t, root, "pids"+cg+"/tasks", "1\n2\n3\n")
	write(t, root, "cpuacct"+cg+"/cpuacct.usage", "5000000000\n")
	write(t, root, "cpuacct"+cg+"/cpuacct.stat", "user 300\nsystem 100\n")
	write(t, root, "cpu"+cg+"/cpu.stat", "nr_periods 10\nnr_throttled 4\nthrottled_time 7000\n")
	write(t, root, "cpu"+cg+"/cpu.cfs_period_us", "100000\n")
	write(t, root, "cpu"+cg+"/cpu.cfs_quota_us", "20000\n")
	write(t, root, "cpu"+cg+"/cpu.shares", "1024\n")
	write(t, root, "memory"+cg+"/memory.usage_in_bytes", "1000\n")
	write(t, root, "memory"+cg+"/memory.stat", "cache 300\nrss 600\nmapped_file 50\npgfault 9\npgmajfault 1\ntotal_inactive_file 200\n")
	write(t, root, "memory"+cg+"/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
	write(t, root, "blkio"+cg+"/blkio.throttle.io_service_bytes", "8:0 Read 4096\n8:0 Write 512\n8:0 Total 4608\nTotal 4608\n")
	s, err := Read(cg)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want uint64
	}{
		{"cpu usage", s.CPUUsageNanos, 5e9},
		{"cpu user", s.CPUUserNanos, 3e9},
		{"cpu system", s.CPUSystemNanos, 1e9},
		{"throttled", s.CFSThrottledPeriods, 4},
		{"shares", s.CPUShares, 1024},
		{"working set", s.MemoryWorkingSet, 800},
		{"oom kills", s.OOMKills, 2},
		{"threads", s.Threads, 3},
		{"threads max (max)", s.ThreadsMax, 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if s.CPUQuotaMicros != 20000 || !reflect.DeepEqual(s.Pids, []int{1, 2}) {
		t.Errorf("quota %d pids %v", s.CPUQuotaMicros, s.Pids)
	}
	if s.BlkioBytes["8:0"]["Read"] != 4096 || s.BlkioBytes["8:0"]["Write"] != 512 {
		t.Errorf("blkio %v", s.BlkioBytes)
	}
	if s.CPUPressure != nil || s.MemoryPressure != nil || s.IOPressure != nil {
		t.Errorf("pressure without pressure files: %v %v %v", s.CPUPressure, s.MemoryPressure, s.IOPressure)
	}
}

// PSI of a v1 host comes from the unified hierarchy mounted beside it.
func TestReadPSIUnifiedBesideV1(t *testing.T) {
	root := t.TempDir()
	old := Root
	Root = root
	t.Cleanup(func() { Root = old })
	cg := "/pod/app"
	write(t, root, "pids"+cg+"/cgroup.procs", "1\n")
	write(t, root, "unified"+cg+"/cpu.pressure", "some avg10=1.50 avg60=0.25 avg300=0.00 total=123456\nfull avg10=0.50 avg60=0.00 avg300=0.00 total=42\n")
	write(t, root, "unified"+cg+"/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=7\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=3\n")
	s, err := Read(cg)
	if err != nil {
		t.Fatal(err)
	}
	want := &PSI{Some: PSIData{Avg10: 1.5, Avg60: 0.25, Total: 123456}, Full: PSIData{Avg10: 0.5, Total: 42}}
	if !reflect.DeepEqual(s.CPUPressure, want) {
		t.Errorf("cpu pressure %+v, want %+v", s.CPUPressure, want)
	}
	if s.MemoryPressure == nil || s.MemoryPressure.Some.Total != 7 || s.MemoryPressure.Full.Total != 3 {
		t.Errorf("memory pressure %+v", s.MemoryPressure)
	}
	if s.IOPressure != nil {
		t.Errorf("io pressure %+v without io.pressure", s.IOPressure)
	}
	if parsePSI("garbage") != nil {
		t.Error("parsePSI of a file without a some line is not nil")
	}
}

func TestReadMissingCgroup(t *testing.T) {
	old := Root
	Root = t.TempDir()
	t.Cleanup(func() { Root = old })
	if _, err := Read("/nope"); err == nil {
		t.Fatal("Read of a missing cgroup succeeded")
	}
}

func TestParseProcCgroup(t *testing.T) {
	in := "12:pids:/rkt/p/a\n4:cpu,cpuacct:/rkt/p/a\n1:name=systemd:/x\n0::/rkt/p/a2\n"
	got := parseProcCgroup(in)
	want := map[string]string{"pids": "/rkt/p/a", "cpu": "/rkt/p/a", "cpuacct": "/rkt/p/a", "name=systemd": "/x", "": "/rkt/p/a2"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseProcCgroup = %v, want %v", got, want)
	}
}

func TestReadPidSelf(t *testing.T) {
	s, err := ReadPid(os.Getpid())
	if err != nil {
		t.Skipf("no readable cgroup for this process: %v", err)
	}
	found := false
	for _, p := range s.Pids {
		if p == os.Getpid() {
			found = true
		}
	}
	if !found || s.CPUUsageNanos == 0 || s.MemoryUsage == 0 {
		t.Fatalf("ReadPid(self): pids %v cpu %d memory %d; want this process, cpu and memory used", s.Pids, s.CPUUsageNanos, s.MemoryUsage)
	}
}

// A pod's cgroup has its apps' memory in the total_ figures of v1.
func TestReadV1Hierarchical(t *testing.T) {
	root := t.TempDir()
	old := Root
	Root = root
	t.Cleanup(func() { Root = old })
	cg := "/pod"
	write(t, root, "pids"+cg+"/cgroup.procs", "")
	write(t, root, "memory"+cg+"/memory.stat", "rss 0\ncache 0\npgfault 0\ntotal_rss 4096\ntotal_cache 8192\ntotal_pgfault 5\n")
	s, err := Read(cg)
	if err != nil {
		t.Fatal(err)
	}
	if s.MemoryRSS != 4096 || s.MemoryCache != 8192 || s.MemoryPgFault != 5 {
		t.Errorf("v1 rss %d cache %d pgfault %d, want the total_ figures 4096, 8192 and 5", s.MemoryRSS, s.MemoryCache, s.MemoryPgFault)
	}
}

func TestReadV2(t *testing.T) {
	root := fakeV2Root(t)
	cg := "/pod/app"
	write(t, root, cg+"/cgroup.procs", "7\n8\n")
	write(t, root, cg+"/cgroup.threads", "7\n8\n9\n")
	write(t, root, cg+"/cpu.stat", "usage_usec 5000\nuser_usec 3000\nsystem_usec 2000\nnr_periods 10\nnr_throttled 4\nthrottled_usec 7\n")
	write(t, root, cg+"/cpu.max", "20000 100000\n")
	write(t, root, cg+"/cpu.weight", "100\n")
	write(t, root, cg+"/memory.current", "1000\n")
	write(t, root, cg+"/memory.peak", "1500\n")
	write(t, root, cg+"/memory.max", "max\n")
	write(t, root, cg+"/memory.swap.max", "4096\n")
	write(t, root, cg+"/memory.swap.current", "12\n")
	write(t, root, cg+"/memory.stat", "anon 600\nfile 300\nkernel 40\nfile_mapped 50\npgfault 9\npgmajfault 1\ninactive_file 200\n")
	write(t, root, cg+"/memory.events", "low 0\nhigh 3\nmax 5\noom 1\noom_kill 2\n")
	write(t, root, cg+"/memory.low", "64\n")
	write(t, root, cg+"/pids.current", "2\n")
	write(t, root, cg+"/pids.max", "100\n")
	write(t, root, cg+"/cpu.pressure", "some avg10=1.50 avg60=0.25 avg300=0.00 total=1234\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=56\n")
	s, err := Read(cg)
	if err != nil {
		t.Fatal(err)
	}
	want := &Stats{
		CPUUsageNanos: 5e6, CPUUserNanos: 3e6, CPUSystemNanos: 2e6,
		CFSPeriods: 10, CFSThrottledPeriods: 4, CFSThrottledNanos: 7000,
		CPUPeriodMicros: 100000, CPUQuotaMicros: 20000, CPUShares: 1024,
		MemoryUsage: 1000, MemoryMaxUsage: 1500, MemoryFailcnt: 5,
		MemoryCache: 300, MemoryRSS: 600, MemoryMappedFile: 50, MemorySwap: 12, MemoryKernel: 40,
		MemoryWorkingSet: 800, MemoryPgFault: 9, MemoryPgMajFault: 1,
		MemoryLimit: 0, MemorySwapLimit: 0, MemoryReservation: 64, MemoryHighEvents: 3, OOMKills: 2,
		Processes: 2, Threads: 3, ThreadsMax: 100, Pids: []int{7, 8},
		CPUPressure: &PSI{Some: PSIData{Avg10: 1.5, Avg60: 0.25, Total: 1234}, Full: PSIData{Total: 56}},
	}
	s.Missing = nil // no io.pressure, memory.pressure
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Read = %+v\nwant %+v", s, want)
	}
	// memory+swap, as v1's memsw: with a memory limit, and none allowed
	// (the kubelet's NoSwap) or some
	for swap, want := range map[string]uint64{"0": 1 << 20, "4096": 1<<20 + 4096, "max": 0} {
		write(t, root, cg+"/memory.max", "1048576\n")
		write(t, root, cg+"/memory.swap.max", swap+"\n")
		if s, err := Read(cg); err != nil || s.MemorySwapLimit != want {
			t.Errorf("memory.max 1048576, memory.swap.max %s: swap limit %d (%v), want %d", swap, s.MemorySwapLimit, err, want)
		}
	}
}

// On cgroup v2 the block I/O figures come from io.stat, per device, as
// v1's blkio.throttle files give them (the CRI's container_fs_* and
// container_blkio_device_usage_total metrics).
func TestReadV2IOStat(t *testing.T) {
	root := fakeV2Root(t)
	cg := "/pod/app"
	write(t, root, cg+"/cgroup.procs", "7\n")
	write(t, root, cg+"/io.stat", "8:0 rbytes=4096 wbytes=512 rios=3 wios=1 dbytes=0 dios=0\n"+
		"253:1 rbytes=10 wbytes=20 rios=1 wios=2 dbytes=7 dios=1\n259:0 rbytes=x wbytes=5\n")
	s, err := Read(cg)
	if err != nil {
		t.Fatal(err)
	}
	wantBytes := map[string]map[string]uint64{"8:0": {"Read": 4096, "Write": 512}, "253:1": {"Read": 10, "Write": 20}, "259:0": {"Read": 0, "Write": 5}}
	wantOps := map[string]map[string]uint64{"8:0": {"Read": 3, "Write": 1}, "253:1": {"Read": 1, "Write": 2}, "259:0": {"Read": 0, "Write": 0}}
	if !reflect.DeepEqual(s.BlkioBytes, wantBytes) || !reflect.DeepEqual(s.BlkioOps, wantOps) {
		t.Errorf("io.stat: bytes %v, ops %v; want %v, %v", s.BlkioBytes, s.BlkioOps, wantBytes, wantOps)
	}
	// no io controller in the cgroup: none, and no error
	os.Remove(filepath.Join(root, cg, "io.stat"))
	if s, err := Read(cg); err != nil || s.BlkioBytes != nil || s.BlkioOps != nil {
		t.Errorf("without io.stat: %v, %v (%v)", s.BlkioBytes, s.BlkioOps, err)
	}
}
