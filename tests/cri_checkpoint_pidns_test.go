package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// forkerScript is counterScript that, when /spawn holds a number n, starts
// n long-lived sleeps: n new PIDs, each the lowest free one above the
// namespace's last.
const forkerScript = `trap 'exit 0' TERM; i=0; j=0; [ -p /tick ] || mkfifo /tick; exec 3<>/tick; while true; do i=$((i+1)); j=$((j+1)); echo $i $j; if [ -f /spawn ]; then n=$(cat /spawn); rm /spawn; k=0; while [ $k -lt $n ]; do sleep 100000 & k=$((k+1)); done; fi; read -t 0.1 x <&3; done`

// TestCRIRestoreSharedPIDForks: in a pod whose containers share one PID
// namespace, a restored container that forks before the others are
// restored takes no PID they need. The forker, restored first, starts more
// processes than the pod had before the checkpoint; the counter, restored
// after, needs PIDs in that range (without the pod's last PID raised past
// them criu fails: "Can't fork for N: File exists").
func TestCRIRestoreSharedPIDForks(t *testing.T) {
	_, _, c, imgID := checkpointService(t, toolPath(t, "criu"))
	ctx := rpcCtx(t)
	forker := func(cfg *runtimeapi.ContainerConfig) {
		if cfg.Metadata.Name == "forker" {
			cfg.Command = []string{"sh", "-c", forkerScript}
		}
	}
	logDir := podLogDir(t, c)
	pc := podConfig("ckpt-forks", logDir)
	podID, ids := runCounters(t, c, imgID, pc, forker, "forker")
	// 60 PIDs go by before the counter starts: its PIDs are above those a
	// restore of the pod uses up before the forker forks
	_, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ids[0],
		Cmd: []string{"sh", "-c", "i=0; while [ $i -lt 60 ]; do /bin/true; i=$((i+1)); done"}, Timeout: 30})
	must(t, "ExecSync of 60 processes", err)
	var cfgs []*runtimeapi.ContainerConfig
	for _, name := range []string{"forker", "counter"} {
		cfg := containerConfig(name, imgID, "sh", "-c", counterScript)
		forker(cfg)
		cfgs = append(cfgs, cfg)
	}
	cc, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfgs[1], SandboxConfig: pc})
	must(t, "CreateContainer counter", err)
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cc.ContainerId})
	must(t, "StartContainer counter", err)
	ids = append(ids, cc.ContainerId)
	pids := func(id string) []int {
		t.Helper()
		er, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"ps", "-o", "pid"}, Timeout: 30})
		must(t, "ExecSync ps", err)
		var l []int
		for _, f := range strings.Fields(string(er.Stdout)) {
			if n, err := strconv.Atoi(f); err == nil {
				l = append(l, n)
			}
		}
		return l
	}
	lines := func(dir, name string) int {
		b, _ := os.ReadFile(filepath.Join(dir, name+".log"))
		return strings.Count(string(b), "\n")
	}
	waitUntil(t, 30*time.Second, "the counters", func() bool { return lines(logDir, "forker") > 3 && lines(logDir, "counter") > 3 })
	before := slices.Max(pids(ids[1])) // the pod's highest PID, ps's own included
	out := t.TempDir()
	_, err = c.CheckpointPod(ctx, &runtimeapi.CheckpointPodRequest{PodSandboxId: podID, OutputPath: out, ContainerIds: ids})
	must(t, "CheckpointPod", err)

	logDir2 := podLogDir(t, c)
	rr, err := c.RestorePod(ctx, &runtimeapi.RestorePodRequest{CheckpointPath: out, Config: podConfig("restored-forks", logDir2), ContainerConfigs: cfgs})
	must(t, "RestorePod", err)
	byName := map[string]string{}
	for _, rc := range rr.RestoredContainers {
		byName[rc.Name] = rc.ContainerId
	}
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: byName["forker"]})
	must(t, "StartContainer of the restored forker", err)
	_, err = c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: byName["forker"],
		Cmd: []string{"sh", "-c", fmt.Sprintf("echo %d >/spawn", before+5)}, Timeout: 30})
	must(t, "ExecSync echo >/spawn", err)
	var now []int
	waitUntil(t, 30*time.Second, "the forker's sleeps", func() bool {
		now = pids(byName["forker"])
		return len(now) > before+5
	})
	_, err = c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: byName["counter"]})
	if err != nil {
		t.Logf("criu's restore log:\n%s", criuLogOf(err))
	}
	must(t, "StartContainer of the restored counter, after the forker forked", err)
	// The restored processes are the only ones at or below the pod's
	// highest PID before the checkpoint.
	low := 0
	for _, p := range now {
		if p <= before {
			low++
		}
	}
	if low > 4 {
		t.Errorf("%d processes of the restored pod have PIDs up to %d (the pod's highest before the checkpoint): %v", low, before, now)
	}
	waitUntil(t, 30*time.Second, "the restored counter", func() bool { return lines(logDir2, "counter") > 3 })
	stopRestored(t, c, rr)
}
