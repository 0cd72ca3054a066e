// Package cgstats reads the resource usage of a cgroup (v1 or v2) and of
// the processes in it, for the CRI's cadvisor-style metrics: the kernel's
// own accounting files, read as they are, never estimated.
package cgstats

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Root is where the cgroup hierarchies are mounted.
var Root = "/sys/fs/cgroup"

// Stats are the figures of one cgroup. Missing files leave fields at zero
// and their names in Missing.
type Stats struct {
	CPUUsageNanos, CPUUserNanos, CPUSystemNanos uint64
	CFSPeriods, CFSThrottledPeriods             uint64
	CFSThrottledNanos                           uint64
	CPUPeriodMicros, CPUShares                  uint64
	CPUQuotaMicros                              int64

	MemoryUsage, MemoryMaxUsage, MemoryFailcnt uint64
	MemoryCache, MemoryRSS, MemoryMappedFile   uint64
	MemorySwap, MemoryKernel                   uint64
	MemoryWorkingSet                           uint64
	MemoryPgFault, MemoryPgMajFault            uint64
	MemoryLimit, MemorySwapLimit               uint64
	MemoryReservation                          uint64 // v1 soft limit, v2 memory.low
	MemoryHighEvents                           uint64 // v2 memory.events "high"
	OOMKills                                   uint64

	Processes, Threads, ThreadsMax uint64
	FileDescriptors, Sockets       uint64
	Pids                           []int // processes of the cgroup

	// BlkioBytes and BlkioOps are per device ("maj:min") and operation
	// ("Read", "Write").
	BlkioBytes, BlkioOps map[string]map[string]uint64

	// CPUPressure, MemoryPressure and IOPressure are the cgroup's pressure
	// stall information, read from the unified hierarchy (also mounted
	// beside v1 ones, at unified/); nil where the kernel has none.
	CPUPressure, MemoryPressure, IOPressure *PSI

	Missing []string
}

// PSI is a cgroup v2 pressure file (cpu.pressure, ...): the share of time
// some or all tasks of the cgroup stalled.
type PSI struct {
	Some, Full PSIData
}

// PSIData is one line of a pressure file: averages in percent over 10, 60
// and 300 s, and the total stall time in microseconds.
type PSIData struct {
	Avg10, Avg60, Avg300 float64
	Total                uint64
}

// V2 reports whether the unified hierarchy is the only one.
func V2() bool {
	_, err := os.Stat(filepath.Join(Root, "cgroup.controllers"))
	return err == nil
}

// Read collects the stats of the cgroup at path (absolute, as in an OCI
// spec's cgroupsPath, the same in every hierarchy).
func Read(path string) (*Stats, error) {
	return read(&reader{s: &Stats{}, v2: V2(), path: path})
}

// ReadPid collects the stats of the cgroups process pid is in, as
// /proc/<pid>/cgroup names them (whatever the cgroup driver).
func ReadPid(pid int) (*Stats, error) {
	r := &reader{s: &Stats{}, v2: V2()}
	b, err := r.readFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return nil, fmt.Errorf("cannot read the cgroups of pid %d: %w", pid, err)
	}
	r.paths = parseProcCgroup(string(b))
	r.path = r.paths[""]
	return read(r)
}

// parseProcCgroup maps each controller ("" for the unified hierarchy) to
// the cgroup path in a /proc/<pid>/cgroup file.
func parseProcCgroup(s string) map[string]string {
	paths := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[1] == "" {
			paths[""] = f[2]
			continue
		}
		for _, ctrl := range strings.Split(f[1], ",") {
			paths[ctrl] = f[2]
		}
	}
	return paths
}

func read(r *reader) (*Stats, error) {
	if r.v2 {
		r.readV2()
	} else {
		r.readV1()
	}
	if len(r.s.Pids) == 0 && r.err != nil {
		return nil, r.err
	}
	r.readProcs()
	r.s.CPUPressure = r.psi("cpu.pressure")
	r.s.MemoryPressure = r.psi("memory.pressure")
	r.s.IOPressure = r.psi("io.pressure")
	return r.s, nil
}

type reader struct {
	s     *Stats
	v2    bool
	path  string            // the cgroup path, when the same in every hierarchy
	paths map[string]string // per controller, from /proc/<pid>/cgroup
	err   error
	buf   []byte // of readFile
}

// readFile reads a small kernel file with plain system calls into r's
// buffer (valid until the next call). os.ReadFile also offers each file
// to the Go poller (fcntl, epoll_ctl: refused), a third of the work of
// reading the stats of 500 pods.
func (r *reader) readFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if r.buf == nil {
		r.buf = make([]byte, 4096)
	}
	n := 0
	for {
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		m, err := unix.Read(fd, r.buf[n:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case m == 0:
			return r.buf[:n], nil
		}
		n += m
	}
}

// lines calls f with the fields of each line of a file.
func (r *reader) lines(path string, f func(fields []string)) error {
	b, err := r.readFile(path)
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if fl := strings.Fields(l); len(fl) > 0 {
			f(fl)
		}
	}
	return nil
}

func (r *reader) file(ctrl, name string) string {
	p := r.path
	if q, ok := r.paths[ctrl]; ok && !r.v2 {
		p = q
	}
	if r.v2 {
		return filepath.Join(Root, p, name)
	}
	return filepath.Join(Root, ctrl, p, name)
}

// uint reads a one-number file; "max" is 0.
func (r *reader) uint(ctrl, name string) uint64 {
	b, err := r.readFile(r.file(ctrl, name))
	if err != nil {
		r.missing(name, err)
		return 0
	}
	v := strings.TrimSpace(string(b))
	if v == "max" {
		return 0
	}
	n, _ := strconv.ParseUint(v, 10, 64)
	return n
}

// kv reads a "key value" file.
func (r *reader) kv(ctrl, name string) map[string]uint64 {
	out := map[string]uint64{}
	err := r.lines(r.file(ctrl, name), func(fl []string) {
		if len(fl) == 2 {
			out[fl[0]], _ = strconv.ParseUint(fl[1], 10, 64)
		}
	})
	if err != nil {
		r.missing(name, err)
	}
	return out
}

func (r *reader) missing(name string, err error) {
	r.s.Missing = append(r.s.Missing, name)
	if r.err == nil && !errors.Is(err, os.ErrNotExist) {
		r.err = err
	}
}

func (r *reader) pids(ctrl string) {
	b, err := r.readFile(r.file(ctrl, "cgroup.procs"))
	if err != nil {
		r.err = fmt.Errorf("cannot read the processes of cgroup %s: %w", r.path, err)
		return
	}
	for _, l := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(l); err == nil {
			r.s.Pids = append(r.s.Pids, p)
		}
	}
}

const userHZ = 100 // USER_HZ of cpuacct.stat ticks

func (r *reader) readV1() {
	s := r.s
	r.pids("pids")
	s.CPUUsageNanos = r.uint("cpuacct", "cpuacct.usage")
	st := r.kv("cpuacct", "cpuacct.stat")
	s.CPUUserNanos, s.CPUSystemNanos = st["user"]*1e9/userHZ, st["system"]*1e9/userHZ
	cs := r.kv("cpu", "cpu.stat")
	s.CFSPeriods, s.CFSThrottledPeriods, s.CFSThrottledNanos = cs["nr_periods"], cs["nr_throttled"], cs["throttled_time"]
	s.CPUPeriodMicros = r.uint("cpu", "cpu.cfs_period_us")
	s.CPUShares = r.uint("cpu", "cpu.shares")
	if b, err := r.readFile(r.file("cpu", "cpu.cfs_quota_us")); err == nil {
		s.CPUQuotaMicros, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	s.MemoryUsage = r.uint("memory", "memory.usage_in_bytes")
	s.MemoryMaxUsage = r.uint("memory", "memory.max_usage_in_bytes")
	s.MemoryFailcnt = r.uint("memory", "memory.failcnt")
	s.MemoryKernel = r.uint("memory", "memory.kmem.usage_in_bytes")
	s.MemoryLimit = r.uint("memory", "memory.limit_in_bytes")
	s.MemorySwapLimit = r.uint("memory", "memory.memsw.limit_in_bytes")
	s.MemoryReservation = r.uint("memory", "memory.soft_limit_in_bytes")
	ms := r.kv("memory", "memory.stat")
	// The total_ figures include child cgroups (a pod's apps), as cAdvisor
	// reads them; a leaf's are its own.
	total := func(k string) uint64 {
		if v, ok := ms["total_"+k]; ok {
			return v
		}
		return ms[k]
	}
	s.MemoryCache, s.MemoryRSS, s.MemoryMappedFile, s.MemorySwap = total("cache"), total("rss"), total("mapped_file"), total("swap")
	s.MemoryPgFault, s.MemoryPgMajFault = total("pgfault"), total("pgmajfault")
	s.MemoryWorkingSet = sub(s.MemoryUsage, ms["total_inactive_file"])
	s.OOMKills = r.kv("memory", "memory.oom_control")["oom_kill"]
	s.Processes = r.uint("pids", "pids.current")
	s.ThreadsMax = r.uint("pids", "pids.max")
	if b, err := r.readFile(r.file("pids", "tasks")); err == nil {
		s.Threads = uint64(len(strings.Fields(string(b))))
	}
	s.BlkioBytes = r.blkio("blkio.throttle.io_service_bytes")
	s.BlkioOps = r.blkio("blkio.throttle.io_serviced")
}

func (r *reader) readV2() {
	s := r.s
	r.pids("")
	cs := r.kv("", "cpu.stat")
	s.CPUUsageNanos, s.CPUUserNanos, s.CPUSystemNanos = cs["usage_usec"]*1000, cs["user_usec"]*1000, cs["system_usec"]*1000
	s.CFSPeriods, s.CFSThrottledPeriods, s.CFSThrottledNanos = cs["nr_periods"], cs["nr_throttled"], cs["throttled_usec"]*1000
	if b, err := r.readFile(r.file("", "cpu.max")); err == nil {
		fl := strings.Fields(string(b))
		if len(fl) == 2 {
			s.CPUPeriodMicros, _ = strconv.ParseUint(fl[1], 10, 64)
			if fl[0] != "max" {
				s.CPUQuotaMicros, _ = strconv.ParseInt(fl[0], 10, 64)
			}
		}
	}
	// cpu.weight (1..10000) back to shares (2..262144), as runc converts
	if w := r.uint("", "cpu.weight"); w > 0 {
		s.CPUShares = 2 + ((w-1)*262142)/9999
	}
	s.MemoryUsage = r.uint("", "memory.current")
	s.MemoryMaxUsage = r.uint("", "memory.peak")
	s.MemoryLimit = r.uint("", "memory.max")
	s.MemorySwapLimit = r.uint("", "memory.swap.max")
	s.MemorySwap = r.uint("", "memory.swap.current")
	ms := r.kv("", "memory.stat")
	s.MemoryCache, s.MemoryRSS, s.MemoryMappedFile = ms["file"], ms["anon"], ms["file_mapped"]
	s.MemoryKernel = ms["kernel"]
	s.MemoryPgFault, s.MemoryPgMajFault = ms["pgfault"], ms["pgmajfault"]
	s.MemoryWorkingSet = sub(s.MemoryUsage, ms["inactive_file"])
	ev := r.kv("", "memory.events")
	s.MemoryFailcnt, s.OOMKills, s.MemoryHighEvents = ev["max"], ev["oom_kill"], ev["high"]
	s.MemoryReservation = r.uint("", "memory.low")
	s.Processes = r.uint("", "pids.current")
	s.ThreadsMax = r.uint("", "pids.max")
	if b, err := r.readFile(r.file("", "cgroup.threads")); err == nil {
		s.Threads = uint64(len(strings.Fields(string(b))))
	}
}

// psi parses a pressure file of the cgroup in the unified hierarchy; nil
// when it is missing (no PSI in the kernel, or no unified hierarchy).
func (r *reader) psi(name string) *PSI {
	p := r.path
	dir := Root
	if !r.v2 {
		dir = filepath.Join(Root, "unified")
		if q, ok := r.paths[""]; ok {
			p = q
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, p, name))
	if err != nil {
		return nil
	}
	return parsePSI(string(b))
}

// parsePSI parses "some avg10=0.00 avg60=0.00 avg300=0.00 total=0" lines
// (and "full ..."); nil if there is no "some" line.
func parsePSI(s string) *PSI {
	var out PSI
	some := false
	for _, line := range strings.Split(s, "\n") {
		fl := strings.Fields(line)
		if len(fl) == 0 {
			continue
		}
		var d *PSIData
		switch fl[0] {
		case "some":
			d, some = &out.Some, true
		case "full":
			d = &out.Full
		default:
			continue
		}
		for _, kv := range fl[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "avg10":
				d.Avg10, _ = strconv.ParseFloat(v, 64)
			case "avg60":
				d.Avg60, _ = strconv.ParseFloat(v, 64)
			case "avg300":
				d.Avg300, _ = strconv.ParseFloat(v, 64)
			case "total":
				d.Total, _ = strconv.ParseUint(v, 10, 64)
			}
		}
	}
	if !some {
		return nil
	}
	return &out
}

// blkio parses a v1 "maj:min Op N" file.
func (r *reader) blkio(name string) map[string]map[string]uint64 {
	out := map[string]map[string]uint64{}
	err := r.lines(r.file("blkio", name), func(fl []string) {
		if len(fl) != 3 || (fl[1] != "Read" && fl[1] != "Write") {
			return
		}
		n, _ := strconv.ParseUint(fl[2], 10, 64)
		if out[fl[0]] == nil {
			out[fl[0]] = map[string]uint64{}
		}
		out[fl[0]][fl[1]] += n
	})
	if err != nil {
		return nil
	}
	return out
}

// readProcs counts the open file descriptors and sockets of the cgroup's
// processes.
func (r *reader) readProcs() {
	for _, pid := range r.s.Pids {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			r.s.FileDescriptors++
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(l, "socket:") {
				r.s.Sockets++
			}
		}
	}
}

func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}
