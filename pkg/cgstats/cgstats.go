// Package cgstats reads the resource usage of a cgroup (v1 or v2) and of
// the processes in it, for the CRI's cadvisor-style metrics: the kernel's
// own accounting files, read as they are, never estimated.
package cgstats

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/opencontainers/cgroups"
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
	MemoryLimit                                uint64
	MemorySwapLimit                            uint64 // memory+swap, as v1's memsw (and CRI's); 0: none
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
	v2Mu.Lock()
	defer v2Mu.Unlock()
	if v2Root != Root {
		_, err := os.Stat(filepath.Join(Root, "cgroup.controllers"))
		v2Root, v2 = Root, err == nil
	}
	return v2
}

// V2's answer for v2Root (the hierarchies do not change while running).
var (
	v2Mu   sync.Mutex
	v2Root string
	v2     bool
)

// Read collects the stats of the cgroup at path (absolute, as in an OCI
// spec's cgroupsPath, the same in every hierarchy).
func Read(path string) (*Stats, error) {
	r := newReader()
	defer r.release()
	r.path = path
	return read(r)
}

// ReadPid collects the stats of the cgroups process pid is in, as
// /proc/<pid>/cgroup names them (whatever the cgroup driver).
func ReadPid(pid int) (*Stats, error) {
	r := newReader()
	defer r.release()
	b, err := r.readFile(procPath(pid, "cgroup"))
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
	name  []byte // of the file names opened, NUL-terminated
}

// Reading the stats of 500 pods and their apps every few seconds was most
// of what the kubelet-service allocated (so most of its GCs, which the
// calls served meanwhile wait on): readers are reused, and the files are
// opened and parsed without allocating.
var readers = sync.Pool{New: func() any { return &reader{buf: make([]byte, 4096), name: make([]byte, 0, 256)} }}

func newReader() *reader {
	r := readers.Get().(*reader)
	r.s, r.v2 = &Stats{}, V2()
	return r
}

// release returns r to the pool; what it read is no longer its own.
func (r *reader) release() {
	r.s, r.path, r.paths, r.err = nil, "", nil, nil
	readers.Put(r)
}

// readFile reads a small kernel file with plain system calls into r's
// buffer (valid until the next call). os.ReadFile also offers each file
// to the Go poller (fcntl, epoll_ctl: refused), a third of the work of
// reading the stats of 500 pods.
func (r *reader) readFile(path string) ([]byte, error) {
	r.name = append(append(r.name[:0], path...), 0)
	return r.readName()
}

// readName is readFile of the NUL-terminated name in r.name.
func (r *reader) readName() ([]byte, error) {
	fd, err := r.open()
	for err == unix.EINTR {
		fd, err = r.open()
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: r.pathName(), Err: err}
	}
	defer unix.Close(fd)
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
			return nil, &os.PathError{Op: "read", Path: r.pathName(), Err: err}
		case m == 0:
			return r.buf[:n], nil
		}
		n += m
	}
}

// open opens r.name read-only (unix.Open would copy the name to add the
// NUL that r.name has).
func (r *reader) open() (int, error) {
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&r.name[0])),
		uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// atFDCWD is unix.AT_FDCWD, a negative constant, as a variable (to make
// it a uintptr system call argument).
var atFDCWD = unix.AT_FDCWD

// pathName is r.name without its NUL (for errors).
func (r *reader) pathName() string { return string(r.name[:len(r.name)-1]) }

// setName sets r.name to the path of a file of the cgroup, NUL-terminated.
func (r *reader) setName(ctrl, name string) {
	p := r.path
	if q, ok := r.paths[ctrl]; ok && !r.v2 {
		p = q
	}
	b := append(r.name[:0], Root...)
	if !r.v2 {
		b = append(append(b, '/'), ctrl...)
	}
	if p != "" && p != "/" {
		if p[0] != '/' {
			b = append(b, '/')
		}
		b = append(b, strings.TrimSuffix(p, "/")...)
	}
	r.name = append(append(append(b, '/'), name...), 0)
}

// procPath is the path of a file of /proc/<pid>.
func procPath(pid int, name string) string {
	return "/proc/" + strconv.Itoa(pid) + "/" + name
}

// readCgroupFile reads a file of the cgroup.
func (r *reader) readCgroupFile(ctrl, name string) ([]byte, error) {
	r.setName(ctrl, name)
	return r.readName()
}

// eachLine calls f with each non-empty line of b, its fields split on
// white space into fl (at most len(fl) of them; the rest in the last).
func eachLine(b []byte, fl [][]byte, f func(fl [][]byte)) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		n := 0
		for n < len(fl) {
			line = bytes.TrimLeft(line, " \t")
			if len(line) == 0 {
				break
			}
			end := bytes.IndexAny(line, " \t")
			if end < 0 || n == len(fl)-1 {
				end = len(line)
			}
			fl[n], line = bytes.TrimRight(line[:end], " \t"), line[end:]
			n++
		}
		if n > 0 {
			f(fl[:n])
		}
	}
}

// parseUint is strconv.ParseUint of decimal bytes; 0 when it is not one.
func parseUint(b []byte) uint64 {
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + uint64(c-'0')
	}
	return n
}

// uint reads a one-number file; "max" is 0.
func (r *reader) uint(ctrl, name string) uint64 {
	b, err := r.readCgroupFile(ctrl, name)
	if err != nil {
		r.missing(name, err)
		return 0
	}
	v := bytes.TrimSpace(b)
	if string(v) == "max" {
		return 0
	}
	n, _ := strconv.ParseUint(string(v), 10, 64)
	return n
}

// kv reads the values of keys in a "key value" file: v[i] is that of
// keys[i] (0 when missing); ok[i] tells whether it was there.
func (r *reader) kv(ctrl, name string, keys ...string) (v [16]uint64, ok [16]bool) {
	b, err := r.readCgroupFile(ctrl, name)
	if err != nil {
		r.missing(name, err)
		return v, ok
	}
	var fl [2][]byte
	eachLine(b, fl[:], func(fl [][]byte) {
		if len(fl) != 2 {
			return
		}
		for i, k := range keys {
			if string(fl[0]) == k {
				v[i], ok[i] = parseUint(fl[1]), true
				return
			}
		}
	})
	return v, ok
}

func (r *reader) missing(name string, err error) {
	r.s.Missing = append(r.s.Missing, name)
	if r.err == nil && !errors.Is(err, os.ErrNotExist) {
		r.err = err
	}
}

// words returns the number of white-space separated words of b.
func words(b []byte) uint64 {
	n, in := uint64(0), false
	for _, c := range b {
		space := c == ' ' || c == '\n' || c == '\t'
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

func (r *reader) pids(ctrl string) {
	b, err := r.readCgroupFile(ctrl, "cgroup.procs")
	if err != nil {
		r.err = fmt.Errorf("cannot read the processes of cgroup %s: %w", r.path, err)
		return
	}
	var fl [1][]byte
	eachLine(b, fl[:], func(fl [][]byte) {
		if p, err := strconv.Atoi(string(fl[0])); err == nil {
			r.s.Pids = append(r.s.Pids, p)
		}
	})
}

const userHZ = 100 // USER_HZ of cpuacct.stat ticks

func (r *reader) readV1() {
	s := r.s
	r.pids("pids")
	s.CPUUsageNanos = r.uint("cpuacct", "cpuacct.usage")
	st, _ := r.kv("cpuacct", "cpuacct.stat", "user", "system")
	s.CPUUserNanos, s.CPUSystemNanos = st[0]*1e9/userHZ, st[1]*1e9/userHZ
	cs, _ := r.kv("cpu", "cpu.stat", "nr_periods", "nr_throttled", "throttled_time")
	s.CFSPeriods, s.CFSThrottledPeriods, s.CFSThrottledNanos = cs[0], cs[1], cs[2]
	s.CPUPeriodMicros = r.uint("cpu", "cpu.cfs_period_us")
	s.CPUShares = r.uint("cpu", "cpu.shares")
	if b, err := r.readCgroupFile("cpu", "cpu.cfs_quota_us"); err == nil {
		s.CPUQuotaMicros, _ = strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	}
	s.MemoryUsage = r.uint("memory", "memory.usage_in_bytes")
	s.MemoryMaxUsage = r.uint("memory", "memory.max_usage_in_bytes")
	s.MemoryFailcnt = r.uint("memory", "memory.failcnt")
	s.MemoryKernel = r.uint("memory", "memory.kmem.usage_in_bytes")
	s.MemoryLimit = r.uint("memory", "memory.limit_in_bytes")
	s.MemorySwapLimit = r.uint("memory", "memory.memsw.limit_in_bytes")
	s.MemoryReservation = r.uint("memory", "memory.soft_limit_in_bytes")
	// The total_ figures include child cgroups (a pod's apps), as cAdvisor
	// reads them; a leaf's are its own.
	ms, has := r.kv("memory", "memory.stat",
		"total_cache", "cache", "total_rss", "rss", "total_mapped_file", "mapped_file", "total_swap", "swap",
		"total_pgfault", "pgfault", "total_pgmajfault", "pgmajfault", "total_inactive_file")
	total := func(i int) uint64 { // i: the total_ key, i+1 the leaf's
		if has[i] {
			return ms[i]
		}
		return ms[i+1]
	}
	s.MemoryCache, s.MemoryRSS, s.MemoryMappedFile, s.MemorySwap = total(0), total(2), total(4), total(6)
	s.MemoryPgFault, s.MemoryPgMajFault = total(8), total(10)
	s.MemoryWorkingSet = sub(s.MemoryUsage, ms[12])
	oom, _ := r.kv("memory", "memory.oom_control", "oom_kill")
	s.OOMKills = oom[0]
	s.Processes = r.uint("pids", "pids.current")
	s.ThreadsMax = r.uint("pids", "pids.max")
	if b, err := r.readCgroupFile("pids", "tasks"); err == nil {
		s.Threads = words(b)
	}
	s.BlkioBytes = r.blkio("blkio.throttle.io_service_bytes")
	s.BlkioOps = r.blkio("blkio.throttle.io_serviced")
}

func (r *reader) readV2() {
	s := r.s
	r.pids("")
	cs, _ := r.kv("", "cpu.stat", "usage_usec", "user_usec", "system_usec", "nr_periods", "nr_throttled", "throttled_usec")
	s.CPUUsageNanos, s.CPUUserNanos, s.CPUSystemNanos = cs[0]*1000, cs[1]*1000, cs[2]*1000
	s.CFSPeriods, s.CFSThrottledPeriods, s.CFSThrottledNanos = cs[3], cs[4], cs[5]*1000
	if b, err := r.readCgroupFile("", "cpu.max"); err == nil {
		var fl [2][]byte
		eachLine(b, fl[:], func(fl [][]byte) {
			if len(fl) == 2 {
				s.CPUPeriodMicros, _ = strconv.ParseUint(string(fl[1]), 10, 64)
				if string(fl[0]) != "max" {
					s.CPUQuotaMicros, _ = strconv.ParseInt(string(fl[0]), 10, 64)
				}
			}
		})
	}
	// cpu.weight (1..10000) back to shares (2..262144)
	if w := r.uint("", "cpu.weight"); w > 0 {
		s.CPUShares = weightToShares(w)
	}
	s.MemoryUsage = r.uint("", "memory.current")
	s.MemoryMaxUsage = r.uint("", "memory.peak")
	s.MemoryLimit = r.uint("", "memory.max")
	// memory.swap.max is swap alone ("0": none allowed, as the kubelet's
	// NoSwap writes it); with memory.max it is the memory+swap limit of v1
	if sw, err := r.readCgroupFile("", "memory.swap.max"); err == nil && s.MemoryLimit > 0 {
		if n, err := strconv.ParseUint(string(bytes.TrimSpace(sw)), 10, 64); err == nil {
			s.MemorySwapLimit = s.MemoryLimit + n
		}
	}
	s.MemorySwap = r.uint("", "memory.swap.current")
	ms, _ := r.kv("", "memory.stat", "file", "anon", "file_mapped", "kernel", "pgfault", "pgmajfault", "inactive_file")
	s.MemoryCache, s.MemoryRSS, s.MemoryMappedFile = ms[0], ms[1], ms[2]
	s.MemoryKernel = ms[3]
	s.MemoryPgFault, s.MemoryPgMajFault = ms[4], ms[5]
	s.MemoryWorkingSet = sub(s.MemoryUsage, ms[6])
	ev, _ := r.kv("", "memory.events", "max", "oom_kill", "high")
	s.MemoryFailcnt, s.OOMKills, s.MemoryHighEvents = ev[0], ev[1], ev[2]
	s.MemoryReservation = r.uint("", "memory.low")
	s.Processes = r.uint("", "pids.current")
	s.ThreadsMax = r.uint("", "pids.max")
	s.BlkioBytes, s.BlkioOps = r.ioStat()
	if b, err := r.readCgroupFile("", "cgroup.threads"); err == nil {
		s.Threads = words(b)
	}
}

// weightToShares inverts opencontainers/cgroups' conversion of CPU shares
// to a cgroup v2 weight (for libcontainer's apps, rkt's pod cgroup, runc
// and crun: a quadratic in log2(shares) through (2, 1), (1024, 100) and
// (262144, 10000)): the shares nearest the exact inverse that convert to
// w; several shares have the same weight. The default weight, 100, is 1024
// shares.
func weightToShares(w uint64) uint64 {
	switch {
	case w <= 1:
		return 2
	case w >= 10000:
		return 262144
	}
	x := math.Log10(float64(w)) + 7.0/34.0
	l := (-125 + math.Sqrt(125*125+4*612*x)) / 2
	s := uint64(math.Round(math.Exp2(l)))
	for s > 2 && cgroups.ConvertCPUSharesToCgroupV2Value(s) > w {
		s--
	}
	for s < 262144 && cgroups.ConvertCPUSharesToCgroupV2Value(s) < w {
		s++
	}
	return s
}

// psi parses a pressure file of the cgroup in the unified hierarchy; nil
// when it is missing (no PSI in the kernel, or no unified hierarchy).
func (r *reader) psi(name string) *PSI {
	p := r.path
	root := Root
	if !r.v2 {
		root += "/unified"
		if q, ok := r.paths[""]; ok {
			p = q
		}
	}
	b := append(r.name[:0], root...)
	if p != "" && p != "/" {
		if p[0] != '/' {
			b = append(b, '/')
		}
		b = append(b, strings.TrimSuffix(p, "/")...)
	}
	r.name = append(append(append(b, '/'), name...), 0)
	data, err := r.readName()
	if err != nil {
		return nil
	}
	return parsePSIBytes(data)
}

// parsePSI parses "some avg10=0.00 avg60=0.00 avg300=0.00 total=0" lines
// (and "full ..."); nil if there is no "some" line.
func parsePSI(s string) *PSI { return parsePSIBytes([]byte(s)) }

func parsePSIBytes(b []byte) *PSI {
	var out PSI
	some := false
	var fl [5][]byte
	eachLine(b, fl[:], func(fl [][]byte) {
		var d *PSIData
		switch string(fl[0]) {
		case "some":
			d, some = &out.Some, true
		case "full":
			d = &out.Full
		default:
			return
		}
		for _, kv := range fl[1:] {
			k, v, _ := bytes.Cut(kv, []byte("="))
			switch string(k) {
			case "avg10":
				d.Avg10, _ = strconv.ParseFloat(string(v), 64)
			case "avg60":
				d.Avg60, _ = strconv.ParseFloat(string(v), 64)
			case "avg300":
				d.Avg300, _ = strconv.ParseFloat(string(v), 64)
			case "total":
				d.Total, _ = strconv.ParseUint(string(v), 10, 64)
			}
		}
	})
	if !some {
		return nil
	}
	return &out
}

// blkio parses a v1 "maj:min Op N" file.
func (r *reader) blkio(name string) map[string]map[string]uint64 {
	b, err := r.readCgroupFile("blkio", name)
	if err != nil {
		return nil
	}
	out := map[string]map[string]uint64{}
	var fl [3][]byte
	eachLine(b, fl[:], func(fl [][]byte) {
		if len(fl) != 3 || (string(fl[1]) != "Read" && string(fl[1]) != "Write") {
			return
		}
		n := parseUint(fl[2])
		dev := out[string(fl[0])]
		if dev == nil {
			dev = map[string]uint64{}
			out[string(fl[0])] = dev
		}
		if string(fl[1]) == "Read" {
			dev["Read"] += n
		} else {
			dev["Write"] += n
		}
	})
	return out
}

// ioStat parses v2's io.stat ("maj:min rbytes=N wbytes=N rios=N wios=N
// ..."; more keys on some kernels) into v1's per-device Read and Write
// bytes and operations; nil without the io controller in the cgroup.
func (r *reader) ioStat() (bytesByDev, opsByDev map[string]map[string]uint64) {
	b, err := r.readCgroupFile("", "io.stat")
	if err != nil {
		return nil, nil
	}
	bytesByDev, opsByDev = map[string]map[string]uint64{}, map[string]map[string]uint64{}
	var fl [2][]byte
	eachLine(b, fl[:], func(fl [][]byte) {
		if len(fl) != 2 {
			return
		}
		var v [4]uint64 // rbytes, wbytes, rios, wios
		for _, kv := range bytes.Fields(fl[1]) {
			k, n, ok := bytes.Cut(kv, []byte("="))
			if !ok {
				continue
			}
			switch string(k) {
			case "rbytes":
				v[0] = parseUint(n)
			case "wbytes":
				v[1] = parseUint(n)
			case "rios":
				v[2] = parseUint(n)
			case "wios":
				v[3] = parseUint(n)
			}
		}
		dev := string(fl[0])
		bytesByDev[dev] = map[string]uint64{"Read": v[0], "Write": v[1]}
		opsByDev[dev] = map[string]uint64{"Read": v[2], "Write": v[3]}
	})
	return bytesByDev, opsByDev
}

// readProcs counts the open file descriptors and sockets of the cgroup's
// processes.
func (r *reader) readProcs() {
	link := make([]byte, 64)
	for _, pid := range r.s.Pids {
		dir := procPath(pid, "fd")
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			r.s.FileDescriptors++
			r.name = append(append(append(append(r.name[:0], dir...), '/'), fd.Name()...), 0)
			n, _, errno := unix.Syscall6(unix.SYS_READLINKAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&r.name[0])),
				uintptr(unsafe.Pointer(&link[0])), uintptr(len(link)), 0, 0)
			if errno == 0 && bytes.HasPrefix(link[:n], []byte("socket:")) {
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
