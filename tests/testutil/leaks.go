package testutil

import (
	"bufio"
	"bytes"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Leak is one thing a test left behind.
type Leak struct {
	Kind string // mount, process, cgroup, netns, ip, runc, pod
	What string // path, pid and command line, ...
	pid  int
}

// String describes the leak.
func (l Leak) String() string { return l.Kind + ": " + l.What }

// CheckLeaks runs `rkt gc` and `rkt gc --grace-period=0s` on the
// environment's data dir, then reports (t.Errorf) every mount, process,
// cgroup, network namespace, IP reservation, libcontainer state and running
// pod tied to this data dir or to a pod seen in it, and finally removes
// what it can so the machine stays clean. NewEnv registers it as a cleanup.
func (e *Env) CheckLeaks() {
	e.T.Helper()
	uuids := e.tracker.UUIDs()
	if _, err := os.Stat(filepath.Join(e.DataDir, "pods")); err == nil || len(uuids) > 0 {
		for _, args := range [][]string{{"gc"}, {"gc", "--grace-period=0s"}} {
			r := e.Run(args...)
			if r.Code != 0 {
				if strings.Contains(r.Stderr, "unknown command") {
					e.T.Logf("leak check: rkt %s is not available yet: %s", args[0], strings.TrimSpace(r.Stderr))
					break
				}
				e.T.Errorf("leak check: %s", r)
			}
		}
	}
	e.tracker.Stop()
	uuids = e.tracker.UUIDs()
	leaks := FindLeaks(e.DataDir, uuids)
	if len(leaks) == 0 {
		return
	}
	var b strings.Builder
	for _, l := range leaks {
		fmt.Fprintf(&b, "\n  %s", l)
	}
	e.T.Errorf("leak check: %d things left behind by the test (data dir %s, pods %v):%s", len(leaks), e.DataDir, uuids, b.String())
	cleanLeaks(leaks)
}

// FindLeaks lists what exists on the host and is tied to dataDir or to one
// of the pod UUIDs: it never looks at anything else, so tests running in
// parallel do not disturb each other.
func FindLeaks(dataDir string, uuids []string) []Leak {
	var leaks []Leak
	leaks = append(leaks, findMounts(dataDir)...)
	leaks = append(leaks, findProcesses(dataDir, uuids)...)
	leaks = append(leaks, findCgroups(uuids)...)
	leaks = append(leaks, findNetns(uuids)...)
	leaks = append(leaks, findIPReservations(dataDir)...)
	leaks = append(leaks, findPodState(dataDir)...)
	leaks = append(leaks, findCNICache(dataDir)...)
	leaks = append(leaks, findIptables(uuids)...)
	return leaks
}

// findCNICache reports libcni cached results (attachments not deleted)
// under <dataDir>/networks.
func findCNICache(dataDir string) []Leak {
	var leaks []Leak
	filepath.WalkDir(filepath.Join(dataDir, "networks"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(filepath.Dir(path)) == "results" {
			leaks = append(leaks, Leak{Kind: "cni", What: "cached attachment " + path})
		}
		return nil
	})
	return leaks
}

// findIptables reports iptables rules and chains that mention a pod UUID
// (CNI's bridge masquerading and portmap tag theirs with the container ID),
// and the chains those plugins made for a pod on the built-in network,
// which are named after it (an ADD killed before the rule that jumps to
// one leaves it with nothing that mentions the pod).
func findIptables(uuids []string) []Leak {
	if len(uuids) == 0 {
		return nil
	}
	out, err := exec.Command("iptables-save").Output()
	if err != nil {
		return nil // no iptables here: nothing to leak
	}
	named := map[string]bool{}
	for _, u := range uuids {
		sum := sha512.Sum512([]byte("default" + u))
		for _, prefix := range []string{"CNI-", "CNI-DN-", "CNI-SN-"} {
			named[(prefix + hex.EncodeToString(sum[:]))[:28]] = true
		}
	}
	var leaks []Leak
	for _, line := range strings.Split(string(out), "\n") {
		chain, _, _ := strings.Cut(strings.TrimPrefix(line, ":"), " ")
		if containsAny(line, uuids) || (strings.HasPrefix(line, ":") && named[chain]) {
			leaks = append(leaks, Leak{Kind: "iptables", What: line})
		}
	}
	return leaks
}

func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

func containsAny(s string, subs []string) bool {
	for _, u := range subs {
		if strings.Contains(s, u) {
			return true
		}
	}
	return false
}

// findMounts reports mount points under dataDir in this mount namespace.
func findMounts(dataDir string) []Leak {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return []Leak{{Kind: "mount", What: "cannot read mountinfo: " + err.Error()}}
	}
	defer f.Close()
	var leaks []Leak
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		if under(mp, dataDir) {
			leaks = append(leaks, Leak{Kind: "mount", What: mp})
		}
	}
	return leaks
}

// unescapeMountPath decodes mountinfo's octal escapes (\040 for space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// findProcesses reports processes whose command line names dataDir, whose
// root or cwd is under it, or whose cgroup names one of the pods.
func findProcesses(dataDir string, uuids []string) []Leak {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return []Leak{{Kind: "process", What: "cannot read /proc: " + err.Error()}}
	}
	self := os.Getpid()
	var leaks []Leak
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue // gone
		}
		cmd := strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		why := ""
		if strings.Contains(cmd, dataDir) {
			why = "command line"
		}
		for _, link := range []string{"root", "cwd"} {
			if t, err := os.Readlink(filepath.Join(dir, link)); err == nil && under(t, dataDir) {
				why = link + " " + t
			}
		}
		if why == "" && len(uuids) > 0 {
			if cg, err := os.ReadFile(filepath.Join(dir, "cgroup")); err == nil && containsAny(string(cg), uuids) {
				why = "cgroup of a pod"
			}
		}
		if why != "" {
			leaks = append(leaks, Leak{Kind: "process", What: fmt.Sprintf("pid %d (%s): %q", pid, why, cmd), pid: pid})
		}
	}
	return leaks
}

// cgroupRoots are the hierarchies to search: every v1 controller mount and
// the v2 hierarchy (hybrid at unified/, or /sys/fs/cgroup itself).
func cgroupRoots() []string {
	const base = "/sys/fs/cgroup"
	var st syscall.Statfs_t
	if err := syscall.Statfs(base, &st); err == nil && st.Type == 0x63677270 { // CGROUP2_SUPER_MAGIC
		return []string{base}
	}
	entries, _ := os.ReadDir(base)
	var roots []string
	for _, e := range entries {
		if e.IsDir() { // symlinks such as cpu -> cpu,cpuacct are skipped
			roots = append(roots, filepath.Join(base, e.Name()))
		}
	}
	return roots
}

// findCgroups reports cgroup directories whose name contains a pod UUID.
func findCgroups(uuids []string) []Leak {
	if len(uuids) == 0 {
		return nil
	}
	var leaks []Leak
	for _, root := range cgroupRoots() {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if path != root && containsAny(d.Name(), uuids) {
				leaks = append(leaks, Leak{Kind: "cgroup", What: path})
				return filepath.SkipDir
			}
			if strings.Count(path[len(root):], "/") >= 10 {
				return filepath.SkipDir
			}
			return nil
		})
	}
	return leaks
}

// findNetns reports named network namespaces that mention a pod UUID.
func findNetns(uuids []string) []Leak {
	if len(uuids) == 0 {
		return nil
	}
	entries, _ := os.ReadDir("/run/netns")
	var leaks []Leak
	for _, e := range entries {
		if containsAny(e.Name(), uuids) {
			leaks = append(leaks, Leak{Kind: "netns", What: filepath.Join("/run/netns", e.Name())})
		}
	}
	return leaks
}

// findIPReservations reports host-local IPAM reservations (files named by
// an IP address) left under <dataDir>/networks.
func findIPReservations(dataDir string) []Leak {
	var leaks []Leak
	filepath.WalkDir(filepath.Join(dataDir, "networks"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && net.ParseIP(d.Name()) != nil {
			leaks = append(leaks, Leak{Kind: "ip", What: path})
		}
		return nil
	})
	return leaks
}

// findPodState reports pods still running after gc and libcontainer state
// left in any pod directory.
func findPodState(dataDir string) []Leak {
	var leaks []Leak
	running, _ := filepath.Glob(filepath.Join(dataDir, "pods", "run", "*"))
	for _, p := range running {
		leaks = append(leaks, Leak{Kind: "pod", What: "still in run state after gc: " + p})
	}
	states, _ := filepath.Glob(filepath.Join(dataDir, "pods", "*", "*", "runc", "*"))
	for _, s := range states {
		leaks = append(leaks, Leak{Kind: "runc", What: s})
	}
	return leaks
}

// cleanLeaks removes what the leak check found, best effort: kill the
// processes, detach the mounts (deepest first), remove the cgroups.
func cleanLeaks(leaks []Leak) {
	var mounts, cgroups, netns []string
	for _, l := range leaks {
		switch l.Kind {
		case "process":
			if l.pid > 0 {
				syscall.Kill(l.pid, syscall.SIGKILL)
			}
		case "mount":
			mounts = append(mounts, l.What)
		case "cgroup":
			cgroups = append(cgroups, l.What)
		case "netns":
			netns = append(netns, l.What)
		}
	}
	time.Sleep(100 * time.Millisecond)
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range append(mounts, netns...) {
		syscall.Unmount(m, syscall.MNT_DETACH)
	}
	for _, n := range netns {
		os.Remove(n)
	}
	for _, c := range cgroups {
		removeCgroupTree(c)
	}
}

// removeCgroupTree removes a cgroup and its children, deepest first.
func removeCgroupTree(dir string) {
	var dirs []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i])
	}
}

// SeenPods returns the UUIDs of every pod seen in the data dir so far.
func (e *Env) SeenPods() []string { return e.tracker.UUIDs() }

// PID is the process of a process leak (0 for other kinds).
func (l Leak) PID() int { return l.pid }
