package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rkt/rkt/tests/testutil"
)

// TestPodTruncatedCNICacheLeavesNothing: libcni writes its cache entry of
// an attachment in place (no temporary file, no sync), so a kill or a
// power cut during an ADD can leave it empty or cut short. Such an entry
// does not keep anything of the pod: its teardown (rkt stop and rm, with
// net-info.json intact or itself cut short) and `rkt gc` of a pod whose
// directory vanished release its address, iptables rules (portmap's DNAT,
// bridge's masquerade chain), veth and the entry itself, and a second gc
// has nothing to complain about.
func TestPodTruncatedCNICacheLeavesNothing(t *testing.T) {
	for _, scenario := range []string{"teardown", "teardown-info-cut", "gc-vanished"} {
		for name, data := range map[string]string{"empty": "", "cut": `{"kind":"cniCacheV1","containerId":"`} {
			t.Run(scenario+"/"+name, func(t *testing.T) {
				pe := newPodEnv(t)
				uuid := pe.runDetached(append([]string{fmt.Sprintf("--port=%d:80", freePort(t)), pe.image}, httpdArgs(80, "cached")...)...)
				p := pe.waitState(uuid, "running", 10*time.Second)
				podDir := filepath.Join(pe.DataDir, "pods", "run", uuid)
				entry := filepath.Join(pe.DataDir, "networks", "cache", "results", "default-"+uuid+"-eth0")
				if _, err := os.Stat(entry); err != nil {
					t.Fatalf("precondition: no cache entry of the pod: %v", err)
				}
				if left := testutil.FindLeaks(pe.DataDir, []string{uuid}); len(left) == 0 {
					t.Fatal("precondition: the running pod holds nothing to release")
				}
				if err := os.WriteFile(entry, []byte(data), 0o600); err != nil {
					t.Fatal(err)
				}
				switch scenario {
				case "teardown", "teardown-info-cut":
					if scenario == "teardown-info-cut" {
						if err := os.WriteFile(filepath.Join(podDir, "net-info.json"), []byte(`{"uuid":"`), 0o600); err != nil {
							t.Fatal(err)
						}
					}
					pe.RunOK("stop", "--timeout=1s", uuid)
					pe.waitState(uuid, "exited", 10*time.Second)
					pe.RunOK("rm", uuid)
				case "gc-vanished":
					// removed by hand after its supervisor died (TestPodGCVanishedPod)
					if err := syscall.Kill(p.Pid, syscall.SIGKILL); err != nil {
						t.Fatalf("cannot kill stage1 %d: %v", p.Pid, err)
					}
					pe.waitState(uuid, "exited", 10*time.Second)
					waitNoPodProcesses(t, uuid)
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					if out, err := exec.CommandContext(ctx, testutil.Stage1Bin(t), "gc", "--pod-dir="+podDir).CombinedOutput(); err != nil {
						t.Fatalf("stage1 gc: %v: %s", err, out)
					}
					unmountTree(t, podDir)
					if err := os.RemoveAll(podDir); err != nil {
						t.Fatalf("cannot remove the pod directory: %v", err)
					}
				}
				for i := 0; i < 2; i++ {
					pe.RunOK("gc")
				}
				if left := testutil.FindLeaks(pe.DataDir, []string{uuid}); len(left) > 0 {
					t.Errorf("%s of a pod with a truncated cache entry left: %v", scenario, left)
				}
			})
		}
	}
}
