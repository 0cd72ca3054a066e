package cgstats

import (
	"strconv"
	"testing"

	"github.com/opencontainers/cgroups"
)

// TestReadV2CPUShares: the shares read back from cpu.weight are those that
// were converted to it, by opencontainers/cgroups' conversion (that of
// libcontainer for rkt's apps, of rkt's pod cgroup, of runc and crun): one
// CPU's 1024 shares are weight 100, cgroup v2's default, and read back as
// 1024; other shares as shares that convert to the same weight (several
// do).
func TestReadV2CPUShares(t *testing.T) {
	root := fakeV2Root(t)
	cg := "/pod/app"
	write(t, root, cg+"/cgroup.procs", "7\n")
	// the kubelet's shares: BestEffort, 100m, 250m, 1, 1.5, 4, 25 CPUs, the max
	for _, shares := range []uint64{2, 102, 256, 1024, 1536, 4096, 25600, 262144} {
		weight := cgroups.ConvertCPUSharesToCgroupV2Value(shares)
		write(t, root, cg+"/cpu.weight", strconv.FormatUint(weight, 10)+"\n")
		s, err := Read(cg)
		if err != nil {
			t.Fatal(err)
		}
		if got := cgroups.ConvertCPUSharesToCgroupV2Value(s.CPUShares); got != weight || (shares == 1024 && s.CPUShares != 1024) {
			t.Errorf("%d shares: cpu.weight %d read as %d shares (weight %d)", shares, weight, s.CPUShares, got)
		}
	}
}
