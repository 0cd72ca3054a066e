package tests

import (
	"bufio"
	"context"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rkt/rkt/tests/testutil"
)

// TestPodGCVanishedPod: a pod whose directory was deleted without a
// network teardown (removed by hand after its supervisor died) still holds
// an IP reservation, a CNI cache entry and iptables rules; `rkt gc` releases
// them.
func TestPodGCVanishedPod(t *testing.T) {
	pe := newPodEnv(t)
	uuid := pe.runDetached(pe.image, "--exec=/bin/sleep", "--", "600")
	p := pe.waitState(uuid, "running", 10*time.Second)
	ip := p.podIP()
	if ip == "" {
		t.Fatalf("pod has no IP: %+v", p)
	}
	if err := syscall.Kill(p.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("cannot kill stage1 %d: %v", p.Pid, err)
	}
	pe.waitState(uuid, "exited", 10*time.Second)
	waitNoPodProcesses(t, uuid)

	// What a user removing the pod by hand does: clean its processes and
	// cgroups (stage1 gc), unmount and delete the directory.
	podDir := filepath.Join(pe.DataDir, "pods", "run", uuid)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, testutil.Stage1Bin(t), "gc", "--pod-dir="+podDir).CombinedOutput(); err != nil {
		t.Fatalf("stage1 gc: %v: %s", err, out)
	}
	unmountTree(t, podDir)
	if err := os.RemoveAll(podDir); err != nil {
		t.Fatalf("cannot remove the pod directory: %v", err)
	}
	networks := filepath.Join(pe.DataDir, "networks")
	if got := networkFilesOf(networks, ip, uuid); len(got) == 0 {
		t.Fatalf("precondition: no reservation of %s or cached result of %s under %s", ip, uuid, networks)
	}

	pe.RunOK("gc")
	if got := networkFilesOf(networks, ip, uuid); len(got) > 0 {
		t.Errorf("rkt gc left the vanished pod's network state: %v", got)
	}
	if out, err := exec.Command("iptables-save").Output(); err == nil && strings.Contains(string(out), uuid) {
		t.Errorf("rkt gc left iptables rules of the vanished pod %s", uuid)
	}
}

// networkFilesOf lists files under dir that are the host-local reservation
// of ip or a libcni cache entry of the pod.
func networkFilesOf(dir, ip, uuid string) []string {
	var found []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if d.Name() == ip || (net.ParseIP(d.Name()) == nil && strings.Contains(d.Name(), uuid)) {
			found = append(found, path)
		}
		return nil
	})
	return found
}

// unmountTree detaches every mount at or under dir, deepest first.
func unmountTree(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			mounts = append(mounts, fields[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			t.Fatalf("cannot unmount %s: %v", m, err)
		}
	}
}

// waitNoPodProcesses waits until no process (zombies included) is in a
// cgroup of the pod: the apps of a killed supervisor die with it and are
// reaped by the host's init.
func waitNoPodProcesses(t *testing.T, uuid string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []string
		procs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
		for _, cg := range procs {
			if b, err := os.ReadFile(cg); err == nil && strings.Contains(string(b), uuid) {
				left = append(left, filepath.Base(filepath.Dir(cg)))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v of pod %s outlived its supervisor", left, uuid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
