package testutil

import (
	"syscall"
	"testing"
	"time"
)

// PowerCut leaves the host as a power cut or a reboot leaves it for the
// pods of dataDir (uuids): their processes killed, their mounts (root
// filesystems, network namespaces), cgroups and NAT rules gone. What is on
// disk under dataDir stays as it was. The pods' bridges are the caller's.
func PowerCut(t testing.TB, dataDir string, uuids []string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		procs := findProcesses(dataDir, uuids)
		if len(procs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("power cut: processes outlive SIGKILL: %v", procs)
		}
		for _, p := range procs {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	cleanLeaks(podState(dataDir, uuids))
	for _, u := range uuids {
		if len(natRules(t, u)) > 0 {
			RemovePodNAT(t, u, false)
		}
	}
	for _, l := range podState(dataDir, uuids) {
		switch l.Kind {
		case "ip", "cni", "pod", "runc": // on disk: a reboot keeps them
		default:
			t.Fatalf("power cut: %s is still there", l)
		}
	}
}

// podState is what FindLeaks finds but a mount on dataDir itself: the
// filesystem the data dir is on is not the pods'.
func podState(dataDir string, uuids []string) []Leak {
	var state []Leak
	for _, l := range FindLeaks(dataDir, uuids) {
		if l.Kind != "mount" || l.What != dataDir {
			state = append(state, l)
		}
	}
	return state
}
