package stage0

import (
	"reflect"
	"testing"

	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestCgroupResourcesAsSpecconv holds the pod cgroup's conversion of
// limits to runc's specconv.CreateCgroupConfig (devices aside).
func TestCgroupResourcesAsSpecconv(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	u16 := func(v uint16) *uint16 { return &v }
	b := func(v bool) *bool { return &v }
	for _, r := range []*specs.LinuxResources{
		{},
		{Memory: &specs.LinuxMemory{Limit: i64(64 << 20)}},
		{
			Memory: &specs.LinuxMemory{Limit: i64(96 << 20), Reservation: i64(32 << 20), Swap: i64(128 << 20),
				Swappiness: u64(10), DisableOOMKiller: b(true), CheckBeforeUpdate: b(true)},
			CPU: &specs.LinuxCPU{Shares: u64(512), Quota: i64(50000), Burst: u64(1000), Period: u64(100000),
				RealtimeRuntime: i64(10), RealtimePeriod: u64(20), Cpus: "0-1", Mems: "0", Idle: i64(1)},
			Pids: &specs.LinuxPids{Limit: i64(100)},
			BlockIO: &specs.LinuxBlockIO{Weight: u16(300), LeafWeight: u16(200),
				WeightDevice:            []specs.LinuxWeightDevice{{LinuxBlockIODevice: specs.LinuxBlockIODevice{Major: 8, Minor: 0}, Weight: u16(100)}},
				ThrottleReadBpsDevice:   []specs.LinuxThrottleDevice{{LinuxBlockIODevice: specs.LinuxBlockIODevice{Major: 8, Minor: 0}, Rate: 1 << 20}},
				ThrottleWriteIOPSDevice: []specs.LinuxThrottleDevice{{LinuxBlockIODevice: specs.LinuxBlockIODevice{Major: 8, Minor: 16}, Rate: 100}}},
			HugepageLimits: []specs.LinuxHugepageLimit{{Pagesize: "2MB", Limit: 1 << 21}},
			Network:        &specs.LinuxNetwork{ClassID: func() *uint32 { v := uint32(7); return &v }(), Priorities: []specs.LinuxInterfacePriority{{Name: "eth0", Priority: 3}}},
			Rdma:           map[string]specs.LinuxRdma{"mlx": {HcaHandles: func() *uint32 { v := uint32(2); return &v }()}},
			Unified:        map[string]string{"memory.high": "max"},
		},
	} {
		cg, err := specconv.CreateCgroupConfig(&specconv.CreateOpts{CgroupName: "x", Spec: &specs.Spec{Linux: &specs.Linux{Resources: r}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := cg.Resources
		want.SkipDevices = true
		if got := cgroupResources(r); !reflect.DeepEqual(got, want) {
			t.Errorf("cgroupResources(%+v)\n = %+v\nwant %+v", r, got, want)
		}
	}
}
