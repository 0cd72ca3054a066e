package stage0

import (
	"os"
	"strings"
	"sync"

	"github.com/opencontainers/cgroups"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

var (
	hugetlbOnce sync.Once
	hugetlbOK   bool
)

// hugetlbAvailable reports whether the cgroup manager libcontainer uses here
// has the hugetlb controller: in the v1 hierarchies (hybrid hosts often
// have hugetlb on their cgroup2 mount only, where libcontainer does not set
// it), or in the root cgroup's controllers on a pure cgroup v2 host.
func hugetlbAvailable() bool {
	hugetlbOnce.Do(func() {
		if cgroups.IsCgroup2UnifiedMode() {
			b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
			hugetlbOK = err == nil && strings.Contains(" "+strings.TrimSpace(string(b))+" ", " hugetlb ")
			return
		}
		_, err := cgroups.FindCgroupMountpoint("", "hugetlb")
		hugetlbOK = err == nil
	})
	return hugetlbOK
}

var hugetlbWarnOnce sync.Once

// withoutMissingHugetlb returns res without its hugepage limits when this
// host has no hugetlb controller, and says so once in the log: the kubelet
// always sends them, and a pod must not fail for a limit that cannot
// exist (containerd's tolerate_missing_hugetlb_controller, its default).
func (r *Runtime) withoutMissingHugetlb(res *specs.LinuxResources) *specs.LinuxResources {
	if res == nil || len(res.HugepageLimits) == 0 || hugetlbAvailable() {
		return res
	}
	hugetlbWarnOnce.Do(func() {
		r.log.Warn("the hugetlb cgroup controller is not available on this host: hugepage limits are ignored")
	})
	c := *res
	c.HugepageLimits = nil
	return &c
}
