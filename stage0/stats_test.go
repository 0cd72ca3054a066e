package stage0

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	sdcgroups "github.com/opencontainers/cgroups/systemd"

	"github.com/rkt/rkt/pkg/cgstats"
	"github.com/rkt/rkt/pkg/schema"
)

func TestParseNetDev(t *testing.T) {
	in := `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       2    0    0    0     0          0         0      100       2    0    0    0     0       0          0
  eth0: 1234567    8901    1    2    0     0          0         0   765432     4321    3    4    0     0       0          0
 short: 1 2 3
`
	got := parseNetDev([]byte(in))
	want := []InterfaceStats{{Name: "eth0", RxBytes: 1234567, RxPackets: 8901, RxErrors: 1, RxDropped: 2,
		TxBytes: 765432, TxPackets: 4321, TxErrors: 3, TxDropped: 4}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseNetDev = %+v, want %+v", got, want)
	}
}

func TestExpandSlice(t *testing.T) {
	for _, in := range []string{"kubepods-burstable-pod1234.slice", "kubepods.slice", "system.slice", "-.slice",
		"a--b.slice", "-a.slice", ".slice", "a.scope", "a/b.slice", ""} {
		got, err := expandSlice(in)
		want, werr := sdcgroups.ExpandSlice(in)
		if got != want || (err == nil) != (werr == nil) {
			t.Errorf("expandSlice(%q) = %q, %v; libcontainer's: %q, %v", in, got, err, want, werr)
		}
	}
}

// TestPodSliceStats: under systemd a pod in a slice of its own reads its
// usage from the slice, which keeps what the scopes of its exited apps
// used; a pod of a shared parent (or of an earlier version) sums its
// running apps' scopes (none here).
func TestPodSliceStats(t *testing.T) {
	root := t.TempDir()
	old := cgstats.Root
	cgstats.Root = root
	t.Cleanup(func() { cgstats.Root = old })
	slice := filepath.Join(root, "kubepods.slice", "kubepods-burstable.slice", "kubepods-burstable-pod1.slice")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o600))
	must(os.MkdirAll(slice, 0o700))
	for name, content := range map[string]string{
		"cgroup.procs":   "",
		"cpu.stat":       "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n",
		"memory.current": "4096\n",
	} {
		must(os.WriteFile(filepath.Join(slice, name), []byte(content), 0o600))
	}
	r := &Runtime{log: slog.New(slog.DiscardHandler)}
	// the burner exited: no app runs
	apps := []AppStatus{{AppStatus: schema.AppStatus{Name: "burner", State: schema.AppExited}}}
	for _, tc := range []struct {
		name   string
		parent string
		own    bool
		cpu    uint64
	}{
		{"own slice", "kubepods-burstable-pod1.slice", true, 1500000000},
		{"own slice as a path", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice", true, 1500000000},
		{"shared parent", "kubepods-burstable-pod1.slice", false, 0},
		{"own parent, not a slice", "/kubepods/burstable/pod1", true, 0},
		{"own slice, gone", "kubepods-burstable-pod2.slice", true, 0},
	} {
		ps := &PodStatus{UUID: "11111111-2222-4333-8444-555555555555", State: PodRunning, Apps: apps,
			Manifest: &schema.PodManifest{CgroupParent: tc.parent, OwnCgroupParent: tc.own}}
		var s cgstats.Stats
		r.readPodCgroup(ps, true, &s)
		if s.CPUUsageNanos != tc.cpu {
			t.Errorf("%s: CPU usage %d, want %d", tc.name, s.CPUUsageNanos, tc.cpu)
		}
		if tc.cpu > 0 && (s.CPUUserNanos != 1000000000 || s.MemoryUsage != 4096) {
			t.Errorf("%s: user CPU %d, memory %d: not the slice's", tc.name, s.CPUUserNanos, s.MemoryUsage)
		}
	}
}

// TestStatsCacheKeepsNothingReadBeforeForget: stats read before a change
// of limits (forget) are not kept after it, by a call's read or by a
// refresh's batch: they may carry the old limits, which ContainerStatus
// reports.
func TestStatsCacheKeepsNothingReadBeforeForget(t *testing.T) {
	c := &statsCache{m: map[string]*AppStats{}}
	const key = "pod/app/1"
	reading, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		c.get(key, func() (*AppStats, error) {
			close(reading)
			<-release
			return &AppStats{Timestamp: time.Now()}, nil
		})
	}()
	<-reading
	c.forget("pod")
	close(release)
	<-done
	if c.m[key] != nil {
		t.Error("a call's read from before the forget was kept")
	}

	gen := c.generation()
	c.forget("pod")
	c.keep(gen, map[string]*AppStats{key: {Timestamp: time.Now()}})
	if c.m[key] != nil {
		t.Error("a refresh's batch read before the forget was kept")
	}
	c.keep(c.generation(), map[string]*AppStats{key: {Timestamp: time.Now()}})
	if c.m[key] == nil {
		t.Error("a batch read after the forget was not kept")
	}
	if s, err := c.get(key, func() (*AppStats, error) { return nil, errors.New("read again") }); err != nil || s == nil {
		t.Errorf("a kept entry: %v, %v", s, err)
	}
}
