package kubeletsvc

import (
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// linuxResources translates CRI resources to OCI runtime-spec resources;
// zero CRI values mean "not set".
func linuxResources(r *runtimeapi.LinuxContainerResources) *specs.LinuxResources {
	if r == nil {
		return nil
	}
	out := &specs.LinuxResources{}
	if r.GetCpuPeriod() != 0 || r.GetCpuQuota() != 0 || r.GetCpuShares() != 0 || r.GetCpusetCpus() != "" || r.GetCpusetMems() != "" {
		cpu := &specs.LinuxCPU{Cpus: r.GetCpusetCpus(), Mems: r.GetCpusetMems()}
		if v := uint64(r.GetCpuShares()); v != 0 {
			cpu.Shares = &v
		}
		if v := uint64(r.GetCpuPeriod()); v != 0 {
			cpu.Period = &v
		}
		if v := r.GetCpuQuota(); v != 0 {
			cpu.Quota = &v
		}
		out.CPU = cpu
	}
	if r.GetMemoryLimitInBytes() != 0 || r.GetMemorySwapLimitInBytes() != 0 {
		mem := &specs.LinuxMemory{}
		if v := r.GetMemoryLimitInBytes(); v != 0 {
			mem.Limit = &v
		}
		if v := r.GetMemorySwapLimitInBytes(); v != 0 {
			mem.Swap = &v
		}
		out.Memory = mem
	}
	for _, h := range r.GetHugepageLimits() {
		out.HugepageLimits = append(out.HugepageLimits, specs.LinuxHugepageLimit{Pagesize: h.GetPageSize(), Limit: h.GetLimit()})
	}
	if len(r.GetUnified()) > 0 {
		out.Unified = copyMap(r.GetUnified())
	}
	return out
}

// criResources translates OCI resources back to CRI's form (for status).
func criResources(r *specs.LinuxResources, oomScoreAdj *int) *runtimeapi.LinuxContainerResources {
	out := &runtimeapi.LinuxContainerResources{}
	if r != nil {
		if c := r.CPU; c != nil {
			out.CpusetCpus, out.CpusetMems = c.Cpus, c.Mems
			if c.Shares != nil {
				out.CpuShares = int64(*c.Shares)
			}
			if c.Period != nil {
				out.CpuPeriod = int64(*c.Period)
			}
			if c.Quota != nil {
				out.CpuQuota = *c.Quota
			}
		}
		if m := r.Memory; m != nil {
			if m.Limit != nil {
				out.MemoryLimitInBytes = *m.Limit
			}
			if m.Swap != nil {
				out.MemorySwapLimitInBytes = *m.Swap
			}
		}
		for _, h := range r.HugepageLimits {
			out.HugepageLimits = append(out.HugepageLimits, &runtimeapi.HugepageLimit{PageSize: h.Pagesize, Limit: h.Limit})
		}
		if len(r.Unified) > 0 {
			out.Unified = copyMap(r.Unified)
		}
	}
	if oomScoreAdj != nil {
		out.OomScoreAdj = int64(*oomScoreAdj)
	}
	return out
}

// checkResources refuses values no cgroup can take: negative shares,
// period or memory limits, a quota or swap limit below -1 (unlimited), an
// OOM score adjustment outside [-1000, 1000].
func checkResources(field string, r *runtimeapi.LinuxContainerResources) error {
	for _, v := range []struct {
		name string
		val  int64
		min  int64
	}{
		{"cpu_period", r.GetCpuPeriod(), 0},
		{"cpu_quota", r.GetCpuQuota(), -1},
		{"cpu_shares", r.GetCpuShares(), 0},
		{"memory_limit_in_bytes", r.GetMemoryLimitInBytes(), 0},
		{"memory_swap_limit_in_bytes", r.GetMemorySwapLimitInBytes(), -1},
	} {
		if v.val < v.min {
			return invalidf("%s.%s is %d, below %d", field, v.name, v.val, v.min)
		}
	}
	if v := r.GetOomScoreAdj(); v < -1000 || v > 1000 {
		return invalidf("%s.oom_score_adj %d is outside [-1000, 1000]", field, v)
	}
	for _, s := range []struct{ name, val string }{{"cpuset_cpus", r.GetCpusetCpus()}, {"cpuset_mems", r.GetCpusetMems()}} {
		if strings.Trim(s.val, "0123456789,-") != "" {
			return invalidf("%s.%s %q is not a CPU or node list", field, s.name, s.val)
		}
	}
	for k, v := range r.GetUnified() {
		if k == "" || strings.ContainsAny(k, "/\x00") || k == "." || k == ".." || strings.ContainsRune(v, 0) {
			return invalidf("%s.unified: %q is not a cgroup file name", field, k)
		}
	}
	return nil
}
