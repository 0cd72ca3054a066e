package stage0

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/networking"
	"github.com/rkt/rkt/pkg/cgstats"
	"github.com/rkt/rkt/pkg/schema"
)

// AppStats are the resource usage of an app, or of a pod (all its apps
// together). They are read in one place, here: the cgroup by pkg/cgstats
// (the only cgroup parser), the writable layer by walking it, the network
// from the pod's namespace; the CLI and the CRI (stats, the summary API's
// figures, metrics, the limits in force) all use them.
type AppStats struct {
	Timestamp time.Time
	cgstats.Stats
	// WritableLayer is the app's overlay upper directory (apps only).
	WritableLayer FsUsage
	// Networks are the interfaces of the pod's network namespace but
	// loopback (pods only; none with the host's network).
	Networks []InterfaceStats
}

// InterfaceStats are the counters of one network interface.
type InterfaceStats struct {
	Name                                    string
	RxBytes, RxPackets, RxErrors, RxDropped uint64
	TxBytes, TxPackets, TxErrors, TxDropped uint64
}

// statsInterval is how often the stats of a Runtime with Config.Watch are
// read in the background (cAdvisor's housekeeping and the kubelet's
// summary refresh run every 10s); a call finds them at most this old.
const statsInterval = 10 * time.Second

// readAppStats reads the usage of a running app of a pod.
func readAppStats(ctx context.Context, ps *PodStatus, app string) (*AppStats, error) {
	as := findAppStatus(ps, app)
	if as == nil {
		return nil, fmt.Errorf("app %q in pod %s: %w", app, ps.UUID, ErrAppNotFound)
	}
	if ps.State != PodRunning || as.State != schema.AppRunning || as.Pid <= 0 {
		return nil, fmt.Errorf("app %q of pod %s: %w", as.Name, ps.UUID, ErrNotRunning)
	}
	cg, err := cgstats.ReadPid(as.Pid)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		// its process (or cgroup) is gone: it exited, and its supervisor
		// has not recorded it yet
		return nil, fmt.Errorf("app %q of pod %s exited: %w (%w)", as.Name, ps.UUID, ErrNotRunning, err)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the stats of app %q of pod %s: %w", as.Name, ps.UUID, err)
	}
	layer := dirUsage(ctx, appUpperDir(schema.PodDir(ps.Dir).App(as.Name)))
	if err := ctx.Err(); err != nil { // the layer's walk was cut short
		return nil, fmt.Errorf("cannot read the stats of app %q of pod %s: %w", as.Name, ps.UUID, err)
	}
	return &AppStats{Timestamp: time.Now(), Stats: *cg, WritableLayer: layer}, nil
}

// findAppStatus returns the named app; "" names the only one.
func findAppStatus(ps *PodStatus, app string) *AppStatus {
	if app == "" && len(ps.Apps) == 1 {
		return &ps.Apps[0]
	}
	for i := range ps.Apps {
		if ps.Apps[i].Name == app {
			return &ps.Apps[i]
		}
	}
	return nil
}

// readPodStats reads the usage of a running pod: its cgroup and its
// network namespace's interfaces, through a running app or, when none
// runs, from inside the namespace. With the systemd driver apps have
// scopes and no common pod cgroup: the usage is that of the pod's own
// slice (podSlice) when it has one, which keeps what its removed scopes
// used, else the sum of its running apps' scopes.
func (r *Runtime) readPodStats(ps *PodStatus) (*AppStats, error) {
	if ps.State != PodRunning || ps.Manifest == nil {
		return nil, fmt.Errorf("pod %s is %s: %w", ps.UUID, ps.State, ErrNotRunning)
	}
	out := &AppStats{Timestamp: time.Now()}
	netPid := r.readPodCgroup(ps, SystemdRunning(), &out.Stats)
	if ps.Manifest.Net != NetHost {
		// a pod whose counters cannot be read has stats all the same,
		// without them
		var err error
		if netPid > 0 {
			out.Networks, err = netDev(netPid)
		}
		if netPid == 0 || err != nil { // none runs, or it just exited
			if out.Networks, err = podNetDev(ps); err != nil {
				r.log.Debug("stats: no network counters", "pod", ps.UUID, "error", err)
			}
		}
	}
	return out, nil
}

// readPodCgroup reads the pod's cgroup usage into s (systemd: whether apps
// are in systemd scopes) and returns the pid of a running app, or 0.
func (r *Runtime) readPodCgroup(ps *PodStatus, systemd bool, s *cgstats.Stats) (netPid int) {
	if !systemd {
		if cg, err := cgstats.Read(filepath.Join("/", ps.Manifest.CgroupParent, ps.UUID)); err == nil {
			*s = *cg
		} // else no app has run yet: no cgroup
	}
	sum := AppStats{}
	for i := range ps.Apps {
		a := &ps.Apps[i]
		if a.State != schema.AppRunning || a.Pid <= 0 {
			continue
		}
		if netPid == 0 {
			netPid = a.Pid
		}
		if !systemd {
			continue
		}
		cg, err := cgstats.ReadPid(a.Pid)
		if err != nil {
			continue // exited meanwhile
		}
		sum.add(cg)
	}
	if !systemd {
		return netPid
	}
	*s = sum.Stats
	slice := podSlice(ps.Manifest)
	if slice == "" {
		return netPid
	}
	cg, err := cgstats.Read(slice)
	if err != nil {
		r.log.Debug("stats: cannot read the pod's slice, its running apps' scopes are summed", "pod", ps.UUID, "slice", slice, "error", err)
		return netPid
	}
	// the processes are still the running apps' (the slice has none of
	// its own, and holds the supervisor's scope)
	cg.Processes, cg.Threads, cg.Pids = sum.Processes, sum.Threads, sum.Pids
	cg.FileDescriptors, cg.Sockets = sum.FileDescriptors, sum.Sockets
	*s = *cg
	return netPid
}

// podSlice is the cgroup path of the pod's own slice under the systemd
// driver: its cgroup parent, when the pod holds it alone
// (OwnCgroupParent, the kubelet's per-pod slice) and it is a slice, where
// stage1 puts the apps' scopes. "" otherwise (a shared parent: the apps'
// scopes are in system.slice or a slice other pods use too).
func podSlice(m *schema.PodManifest) string {
	if !m.OwnCgroupParent {
		return ""
	}
	p, err := expandSlice(filepath.Base(m.CgroupParent))
	if err != nil || p == "/" {
		return "" // not a slice, or the root one
	}
	return p
}

// expandSlice returns the cgroup path of a systemd slice unit, as
// libcontainer's systemd driver expands it (opencontainers/cgroups/systemd
// ExpandSlice, not imported: it links dbus): "a-b.slice" is
// /a.slice/a-b.slice.
func expandSlice(slice string) (string, error) {
	name, ok := strings.CutSuffix(slice, ".slice")
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("cannot expand slice %q: not a slice name", slice)
	}
	if name == "-" {
		return "/", nil
	}
	var path, prefix string
	for _, c := range strings.Split(name, "-") {
		if c == "" {
			return "", fmt.Errorf("cannot expand slice %q: empty component", slice)
		}
		path += "/" + prefix + c + ".slice"
		prefix += c + "-"
	}
	return path, nil
}

// add sums the usage of another cgroup into s (limits are left alone).
func (s *AppStats) add(o *cgstats.Stats) {
	s.CPUUsageNanos += o.CPUUsageNanos
	s.CPUUserNanos += o.CPUUserNanos
	s.CPUSystemNanos += o.CPUSystemNanos
	s.MemoryUsage += o.MemoryUsage
	s.MemoryWorkingSet += o.MemoryWorkingSet
	s.MemoryRSS += o.MemoryRSS
	s.MemoryCache += o.MemoryCache
	s.MemoryPgFault += o.MemoryPgFault
	s.MemoryPgMajFault += o.MemoryPgMajFault
	s.Processes += o.Processes
	s.Threads += o.Threads
	s.FileDescriptors += o.FileDescriptors
	s.Sockets += o.Sockets
	s.Pids = append(s.Pids, o.Pids...)
}

// netDev reads the interface counters of the network namespace of pid
// from /proc/<pid>/net/dev, loopback excluded. It is read for every pod
// by the background refresh: parsed in place (a Scanner and the fields of
// each line were most of a pod's refresh allocations).
func netDev(pid int) ([]InterfaceStats, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/net/dev")
	if err != nil {
		return nil, err
	}
	return parseNetDev(b), nil
}

// podNetDev reads the interface counters of the network namespace of a
// running pod none of whose apps runs (a sandbox before its first
// container or after its containers exited), loopback excluded: from
// /proc/thread-self/net/dev of a thread inside the namespace (what
// /proc/<pid>/net shows is the namespace of pid's main thread).
func podNetDev(ps *PodStatus) ([]InterfaceStats, error) {
	netns, release, err := podNetNS(&pod{uuid: ps.UUID, dir: ps.Dir})
	if err != nil {
		return nil, fmt.Errorf("cannot read the interface counters of pod %s: %w", ps.UUID, err)
	}
	defer release()
	var b []byte
	err = networking.InNetNS(netns, func() (err error) {
		b, err = os.ReadFile("/proc/thread-self/net/dev")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cannot read the interface counters of pod %s: %w", ps.UUID, err)
	}
	return parseNetDev(b), nil
}

// parseNetDev parses a /proc/<pid>/net/dev file, loopback excluded.
func parseNetDev(b []byte) []InterfaceStats {
	var out []InterfaceStats
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		name, rest, ok := bytes.Cut(line, []byte(":"))
		name = bytes.TrimSpace(name)
		if !ok || string(name) == "lo" {
			continue
		}
		var n [16]uint64
		f := 0
		for f < len(n) {
			rest = bytes.TrimLeft(rest, " ")
			if len(rest) == 0 {
				break
			}
			end := bytes.IndexByte(rest, ' ')
			if end < 0 {
				end = len(rest)
			}
			n[f], _ = strconv.ParseUint(string(rest[:end]), 10, 64)
			rest = rest[end:]
			f++
		}
		if f < len(n) {
			continue
		}
		out = append(out, InterfaceStats{Name: string(name),
			RxBytes: n[0], RxPackets: n[1], RxErrors: n[2], RxDropped: n[3],
			TxBytes: n[8], TxPackets: n[9], TxErrors: n[10], TxDropped: n[11]})
	}
	return out
}

func (r *Runtime) appStats(ctx context.Context, uuid, app string) (*AppStats, error) {
	ps, err := r.status(ctx, uuid)
	if err != nil {
		return nil, err
	}
	as := findAppStatus(ps, app)
	if r.stats == nil || as == nil || ps.State != PodRunning || as.State != schema.AppRunning {
		return readAppStats(ctx, ps, app) // or why it has none
	}
	return r.stats.get(appStatsKey(ps.UUID, as), func() (*AppStats, error) { return readAppStats(ctx, ps, as.Name) })
}

// appStatsKey is the stats cache's key of a running app: its pod, name and
// process, so that an app that replaced another of the same name (removed,
// added again) is not answered with the stats of the one before.
func appStatsKey(uuid string, as *AppStatus) string {
	return uuid + "/" + as.Name + "/" + strconv.Itoa(as.Pid)
}

func (r *Runtime) podStats(ctx context.Context, uuid string) (*AppStats, error) {
	ps, err := r.status(ctx, uuid)
	if err != nil {
		return nil, err
	}
	if r.stats == nil {
		return r.readPodStats(ps)
	}
	return r.stats.get(ps.UUID, func() (*AppStats, error) { return r.readPodStats(ps) })
}

// statsCache keeps the stats of running pods and apps, refreshed every
// statsInterval in the background (Config.Watch), so that List*Stats
// calls cost a map lookup per pod instead of reading every cgroup and
// walking every writable layer.
type statsCache struct {
	mu sync.Mutex
	m  map[string]*AppStats // pod UUID, or appStatsKey
	// forgets counts the calls of forget: stats read before one may
	// carry the limits it dropped, and are not kept
	forgets uint64
}

// get returns the cached stats of key, or reads (and keeps) them when
// they are missing or older than two refreshes.
func (c *statsCache) get(key string, read func() (*AppStats, error)) (*AppStats, error) {
	c.mu.Lock()
	s, gen := c.m[key], c.forgets
	c.mu.Unlock()
	if s != nil && time.Since(s.Timestamp) < 2*statsInterval {
		return s, nil
	}
	s, err := read()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.forgets == gen {
		c.m[key] = s
	}
	c.mu.Unlock()
	return s, nil
}

// generation is the number of forget calls so far; keep takes it from
// before the reads it stores.
func (c *statsCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.forgets
}

// keep stores stats read at generation gen, unless a forget came since.
func (c *statsCache) keep(gen uint64, batch map[string]*AppStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forgets != gen {
		return // read again on next use, or by the next refresh
	}
	for k, v := range batch {
		c.m[k] = v
	}
}

// forget drops the stats of a pod and its apps (after a change of limits).
func (c *statsCache) forget(uuid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgets++
	for k := range c.m {
		if k == uuid || strings.HasPrefix(k, uuid+"/") {
			delete(c.m, k)
		}
	}
}

// A refresh is spread over statsSpread, statsBatch pods at a time: at 500
// pods it reads ~17000 cgroup files (~0.5 s of CPU), which in one burst
// delayed the calls served meanwhile by milliseconds (and batches of 16
// pods, ~15 ms of CPU each, still some). Each pod is still read every
// statsInterval.
const (
	statsSpread = statsInterval / 2
	statsBatch  = 4
)

// statsNice is the nice value of the thread refreshing the stats: on a
// busy machine the threads serving calls run first.
const statsNice = 10

// refreshStats reads the stats of every running pod and app into the
// cache, batch by batch, and drops those of what stopped.
func (r *Runtime) refreshStats(ctx context.Context) {
	pods, err := r.List(ctx)
	if err != nil {
		r.log.Warn("stats: cannot list pods", "error", err)
		return
	}
	seen := map[string]bool{}
	batch := map[string]*AppStats{}
	gen := r.stats.generation()
	flush := func() {
		r.stats.keep(gen, batch)
		clear(batch)
		gen = r.stats.generation()
	}
	start := time.Now()
	for i, ps := range pods {
		if i > 0 && i%statsBatch == 0 {
			flush()
			if d := time.Until(start.Add(statsSpread * time.Duration(i) / time.Duration(len(pods)))); d > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(d):
				}
			}
		}
		if ps.State != PodRunning || ctx.Err() != nil {
			continue
		}
		if s, err := r.readPodStats(ps); err == nil {
			batch[ps.UUID], seen[ps.UUID] = s, true
		}
		for _, a := range ps.Apps {
			if a.State != schema.AppRunning {
				continue
			}
			s, err := readAppStats(ctx, ps, a.Name)
			if err == nil {
				key := appStatsKey(ps.UUID, &a)
				batch[key], seen[key] = s, true
			} else if !errors.Is(err, ErrNotRunning) {
				r.log.Debug("stats: cannot read the usage of an app", "pod", ps.UUID, "app", a.Name, "error", err)
			}
		}
	}
	flush()
	r.stats.mu.Lock()
	for k := range r.stats.m {
		if !seen[k] {
			delete(r.stats.m, k)
		}
	}
	r.stats.mu.Unlock()
}

// statsLoop refreshes the stats cache until ctx ends.
func (r *Runtime) statsLoop(ctx context.Context) {
	// a thread of its own, niced; never unlocked, so that it ends with
	// the loop and no call runs on it
	runtime.LockOSThread()
	if err := unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), statsNice); err != nil {
		r.log.Debug("stats: cannot lower the priority of the refresh", "error", err)
	}
	t := time.NewTicker(statsInterval)
	defer t.Stop()
	for {
		r.refreshStats(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
