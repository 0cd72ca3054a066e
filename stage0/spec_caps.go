package stage0

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// defaultCaps are the capabilities apps get by default (Docker's and
// containerd's set).
var defaultCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
	"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
	"CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// allCaps are the Linux capabilities by number.
var allCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
	"CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP",
	"CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
	"CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
	"CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD",
	"CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP",
	"CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

// knownCaps returns the capabilities an app may be given: those the
// kernel supports that are in the bounding set of this process (stage1
// inherits it and cannot grant more; root here may lack some, e.g.
// CAP_SYS_RESOURCE).
func knownCaps() []string {
	caps := allCaps
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if last, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && last >= 0 && last+1 <= len(allCaps) {
			caps = allCaps[:last+1]
		}
	}
	bnd, ok := boundingSet()
	if !ok {
		return caps
	}
	var out []string
	for i, c := range caps {
		if bnd&(1<<uint(i)) != 0 {
			out = append(out, c)
		}
	}
	return out
}

// boundingSet reads CapBnd of this process.
func boundingSet() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// normalizeCap turns "net_admin", "NET_ADMIN" or "CAP_NET_ADMIN" into
// "CAP_NET_ADMIN" and checks that it exists; "ALL" stays "ALL".
func normalizeCap(c string) (string, error) {
	c = strings.ToUpper(strings.TrimSpace(c))
	if c == "ALL" {
		return c, nil
	}
	if !strings.HasPrefix(c, "CAP_") {
		c = "CAP_" + c
	}
	for _, k := range allCaps {
		if k == c {
			return c, nil
		}
	}
	return "", fmt.Errorf("unknown capability %q: %w", c, ErrInvalid)
}

// expandCaps normalizes capability names, ALL standing for every known one.
func expandCaps(caps, known []string) ([]string, error) {
	var out []string
	for _, c := range caps {
		n, err := normalizeCap(c)
		if err != nil {
			return nil, err
		}
		if n == "ALL" {
			out = append(out, known...)
			continue
		}
		out = append(out, n)
	}
	return out, nil
}

// capabilities computes the app's capability sets.
func capabilities(o AppOptions) (*specs.LinuxCapabilities, error) {
	known := knownCaps()
	if o.Privileged {
		// Every capability, whatever the add and drop lists say, as
		// containerd (WithPrivileged after WithCapabilities) and CRI-O
		// (SetupPrivileged instead of the capability setup) give it.
		all := append([]string{}, known...)
		return &specs.LinuxCapabilities{Bounding: all, Effective: all, Permitted: all}, nil
	}
	var set []string
	switch {
	case o.CapsRetain != nil:
		retain, err := expandCaps(o.CapsRetain, known)
		if err != nil {
			return nil, err
		}
		set = append(set, retain...)
	default:
		set = append(set, defaultCaps...)
	}
	add, err := expandCaps(o.CapsAdd, known)
	if err != nil {
		return nil, err
	}
	set = append(set, add...)
	drop := map[string]bool{}
	for _, c := range o.CapsDrop {
		n, err := normalizeCap(c)
		if err != nil {
			return nil, err
		}
		if n == "ALL" {
			for _, k := range allCaps {
				drop[k] = true
			}
			continue
		}
		drop[n] = true
	}
	// CRI semantics: an explicit add wins over drop ALL.
	added := map[string]bool{}
	for _, c := range o.CapsAdd {
		if n, _ := normalizeCap(c); n != "" && n != "ALL" {
			added[n] = true
		}
	}
	var final []string
	seen := map[string]bool{}
	for _, c := range set {
		if seen[c] || (drop[c] && !added[c]) {
			continue
		}
		seen[c] = true
		final = append(final, c)
	}
	if final == nil {
		final = []string{}
	}
	return &specs.LinuxCapabilities{
		Bounding:  final,
		Effective: final,
		Permitted: final,
	}, nil
}
