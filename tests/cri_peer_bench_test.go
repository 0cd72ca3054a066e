package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// smapsKB returns a field (Pss, Rss...) of /proc/<pid>/smaps_rollup in KiB.
func smapsKB(pid int, field string) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// childrenOf lists the children of pid (of all its threads).
func childrenOf(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, file := range files {
		b, _ := os.ReadFile(file)
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// ppidOf returns the parent of pid.
func ppidOf(pid int) int { return procStatusInt(pid, "PPid") }

func procStatusInt(pid int, field string) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(string(b), "\x00", " ")
}

// sandboxPidFromInfo returns the "pid" of a verbose PodSandboxStatus: rkt's
// supervisor, containerd's sandbox (pause) process.
func sandboxPidFromInfo(t testing.TB, c *criClient, id string) int {
	st, err := c.PodSandboxStatus(context.Background(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	must(t, "PodSandboxStatus", err)
	var info struct {
		Pid int `json:"pid"`
	}
	must(t, "parse info", json.Unmarshal([]byte(st.Info["info"]), &info))
	return info.Pid
}

// rktPodPSS is the PSS of a pod's own processes: the supervisor and the
// shared PID namespace's holder (apps excluded).
func rktPodPSS(t testing.TB, c *criClient, id string) int {
	sv := sandboxPidFromInfo(t, c, id)
	kb := smapsKB(sv, "Pss")
	for _, ch := range childrenOf(sv) {
		if strings.HasSuffix(strings.TrimSpace(cmdline(ch)), " pidns") {
			kb += smapsKB(ch, "Pss")
		}
	}
	return kb
}

// containerdPodPSS is the PSS of a pod's own processes under containerd:
// the shim and the sandbox (pause) process.
func containerdPodPSS(t testing.TB, c *criClient, id string) int {
	pause := sandboxPidFromInfo(t, c, id)
	return smapsKB(pause, "Pss") + smapsKB(ppidOf(pause), "Pss")
}

// peer is one runtime under measurement.
type peer struct {
	name   string
	c      *criClient
	ep     string // unix:// endpoint for crictl
	pid    int    // the daemon
	imgID  string
	podPSS func(testing.TB, *criClient, string) int
	// cgroupParent of its pods ("": the runtime's default); the kubelet
	// always gives one, and containerd 1.6 has no pod stats without it
	cgroupParent string
}

// podConfig is the sandbox config of a pod of p.
func (p *peer) podConfig(name, logDir string) *runtimeapi.PodSandboxConfig {
	pc := podConfig(name, logDir)
	pc.Linux.CgroupParent = p.cgroupParent
	return pc
}

// runPod starts a sandbox of p with a running container (`sleep`).
func (p *peer) runPod(t testing.TB, name, logDir string) (string, string) {
	ctx := context.Background()
	pc := p.podConfig(name, logDir)
	rp, err := p.c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
	must(t, p.name+" RunPodSandbox", err)
	cc, err := p.c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId,
		Config: containerConfig("sleeper", p.imgID, "sleep", "100000"), SandboxConfig: pc})
	must(t, p.name+" CreateContainer", err)
	_, err = p.c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cc.ContainerId})
	must(t, p.name+" StartContainer", err)
	return rp.PodSandboxId, cc.ContainerId
}

// BenchmarkCRIVsContainerd measures the kubelet-service and containerd
// side by side in one run, their calls interleaved so that the machine's
// drift hits both: the pod and container lifecycle per RPC (p50 of 20
// rounds), crictl runp+create+start as processes, List*/Status at 10
// running pods, the daemon's RSS (idle, and at 10 pods after the calls)
// and each pod's own memory (PSS of rkt's supervisor and namespace
// holder; of containerd's shim and pause).
// It prints one table with the ratio rkt/containerd. Skipped when
// containerd is not installed (make bench installs it).
func BenchmarkCRIVsContainerd(b *testing.B) {
	requireRoot(b)
	version := containerdVersion()
	if version == "" {
		b.Skip("containerd is not installed (.ci/install-bench-deps)")
	}
	env := testutil.NewEnv(b)
	reg := testutil.StartRegistry(b)
	ref, pauseRef := pushPeerImages(b, reg)
	// RKT_BENCH_SVC_LOG=file keeps the service's log there, at debug level
	// (and the crictl pods' stage1 logs in file.stage1);
	// RKT_BENCH_ONLY=crictl measures crictl runp+create+start alone
	// (RKT_BENCH_CRICTL_ROUNDS rounds, default 10).
	level, keep := "warn", os.Getenv("RKT_BENCH_SVC_LOG")
	if keep != "" {
		level = "debug"
	}
	svc := startCRIService(b, env, "--log-level="+level)
	dataDirs := map[string]string{} // stage1 logs to keep: file -> data dir
	if keep != "" {
		b.Cleanup(func() { os.WriteFile(keep, []byte(svc.Log()), 0o600) })
		dataDirs[keep+".stage1"] = env.DataDir
	}
	only := os.Getenv("RKT_BENCH_ONLY")
	crictlRounds := 10
	if s := os.Getenv("RKT_BENCH_CRICTL_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("RKT_BENCH_CRICTL_ROUNDS: bad count %q", s)
		}
		crictlRounds = n
	}
	cd := startContainerd(b, reg.Addr, pauseRef)
	peers := []*peer{
		{name: "rkt", c: dialCRI(b, svc), ep: svc.Endpoint, pid: svc.cmd.Process.Pid, podPSS: rktPodPSS},
		{name: "containerd", c: cd.client(b), ep: "unix://" + cd.Socket, pid: cd.Pid(), podPSS: containerdPodPSS,
			cgroupParent: cd.cgroupParent},
	}
	// RKT_BENCH_BASE=dir adds the rkt and stage1 of dir (another build) as
	// a third peer, rkt-base, measured in the same rounds (its logs, with
	// RKT_BENCH_SVC_LOG, in file.base and file.base.stage1).
	if base := os.Getenv("RKT_BENCH_BASE"); base != "" {
		benv := testutil.NewEnv(b)
		bsvc := startCRIServiceOf(b, benv, filepath.Join(base, "rkt"), filepath.Join(base, "stage1"), "--log-level="+level)
		bp := &peer{name: "rkt-base", c: dialCRI(b, bsvc), ep: bsvc.Endpoint, pid: bsvc.cmd.Process.Pid, podPSS: rktPodPSS}
		peers = append(peers, bp)
		b.Cleanup(func() { removeAllPods(b, bp.c) })
		if keep != "" {
			b.Cleanup(func() { os.WriteFile(keep+".base", []byte(bsvc.Log()), 0o600) })
			dataDirs[keep+".base.stage1"] = benv.DataDir
		}
	}
	ctx := context.Background()
	for _, p := range peers {
		r, err := p.c.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		must(b, p.name+" PullImage", err)
		p.imgID = r.ImageRef
	}
	b.Cleanup(func() { removeAllPods(b, peers[0].c) })
	time.Sleep(time.Second)
	idle := map[string]int{}
	for _, p := range peers {
		idle[p.name] = smapsKB(p.pid, "Rss")
	}
	logDir := b.TempDir()
	lat := map[string]latencies{}
	for _, p := range peers {
		lat[p.name] = latencies{}
	}

	// the lifecycle, one round on each in turn
	for i := 0; i < 20 && only == ""; i++ {
		for _, p := range peers {
			lifecycleRound(b, p, lat[p.name], fmt.Sprintf("vs-%s-%d", p.name, i), logDir)
		}
	}

	// crictl runp+create+start, as the processes a user runs
	for i := 0; i < crictlRounds; i++ {
		for _, p := range peers {
			must(b, p.name+" crictl", lat[p.name].time("crictl runp+create+start", func() error {
				return crictlRun(b, p, fmt.Sprintf("vs-crictl-%s-%d", p.name, i), logDir)
			}))
		}
	}
	for file, dir := range dataDirs { // the pods' stage1 logs, before they go
		logs, _ := filepath.Glob(filepath.Join(dir, "pods", "run", "*", "stage1.log"))
		var all []byte
		for _, l := range logs {
			bs, _ := os.ReadFile(l)
			all = append(all, bs...)
		}
		os.WriteFile(file, all, 0o600)
	}
	for _, p := range peers {
		removeAllPods(b, p.c)
	}
	time.Sleep(time.Second) // let the exits of the removed pods settle

	podPSS, busy := map[string]int{}, map[string]int{}
	if only == "" {
		podPSS, busy = measureTenPods(b, peers, lat, logDir)
	}

	fmt.Printf("BenchmarkCRIVsContainerd: this tree vs %s, same host, same run (ms: p50, p99):\n", version)
	_, withBase := lat["rkt-base"]
	if withBase {
		fmt.Printf("  %-26s %17s %17s %12s %17s %12s %10s\n", "call", "containerd", "rkt", "rkt/ctrd p50",
			"rkt-base", "base/ctrd", "rkt/base")
	} else {
		fmt.Printf("  %-26s %17s %17s %12s\n", "call", "containerd", "rkt", "rkt/ctrd p50")
	}
	for _, name := range []string{"RunPodSandbox", "CreateContainer", "StartContainer", "ExecSync", "StopContainer",
		"RemoveContainer", "StopPodSandbox", "RemovePodSandbox", "crictl runp+create+start",
		"ListPodSandbox", "ListContainers", "PodSandboxStatus", "ContainerStatus",
		"ListContainerStats", "ListPodSandboxStats", "Status"} {
		r, c := lat["rkt"][name], lat["containerd"][name]
		if len(r) == 0 || len(c) == 0 {
			continue
		}
		rp, cp := percentile(r, 50), percentile(c, 50)
		fmt.Printf("  %-26s %8.2f %8.2f %8.2f %8.2f %12.2f", name, ms(cp), ms(percentile(c, 99)),
			ms(rp), ms(percentile(r, 99)), float64(rp)/float64(cp))
		if bl := lat["rkt-base"][name]; len(bl) > 0 {
			bp := percentile(bl, 50)
			fmt.Printf(" %8.2f %8.2f %12.2f %10.2f", ms(bp), ms(percentile(bl, 99)), float64(bp)/float64(cp), float64(rp)/float64(bp))
		}
		fmt.Println()
		metric := strings.ReplaceAll(name, " ", "-")
		b.ReportMetric(ms(rp), metric+"-rkt-p50-ms")
		b.ReportMetric(ms(cp), metric+"-containerd-p50-ms")
		b.ReportMetric(float64(rp)/float64(cp), metric+"-ratio")
	}
	if len(podPSS) == 0 {
		return
	}
	fmt.Printf("  %-26s %17d %17d %12.2f\n", "daemon idle RSS (KiB)", idle["containerd"], idle["rkt"],
		float64(idle["rkt"])/float64(idle["containerd"]))
	fmt.Printf("  %-26s %17d %17d %12.2f\n", "daemon RSS, 10 pods (KiB)", busy["containerd"], busy["rkt"],
		float64(busy["rkt"])/float64(busy["containerd"]))
	fmt.Printf("  %-26s %17d %17d %12.2f\n", "per-pod PSS (KiB)", podPSS["containerd"], podPSS["rkt"],
		float64(podPSS["rkt"])/float64(podPSS["containerd"]))
	b.ReportMetric(float64(idle["rkt"])/1024, "rkt-idle-rss-MiB")
	b.ReportMetric(float64(busy["rkt"])/1024, "rkt-10pods-rss-MiB")
	b.ReportMetric(float64(podPSS["rkt"])/1024, "rkt-pod-pss-MiB")
	b.ReportMetric(float64(podPSS["containerd"])/1024, "containerd-pod-pss-MiB")
}

// measureTenPods times the List/Status/Stats calls at 10 running pods of
// each peer and returns each peer's mean per-pod PSS and its daemon's RSS
// at 10 pods, the calls done (KiB).
func measureTenPods(b *testing.B, peers []*peer, lat map[string]latencies, logDir string) (map[string]int, map[string]int) {
	ctx := context.Background()
	pods := map[string][]string{}
	ctrs := map[string][]string{}
	for i := 0; i < 10; i++ {
		for _, p := range peers {
			pod, ctr := p.runPod(b, fmt.Sprintf("vs10-%s-%d", p.name, i), logDir)
			pods[p.name], ctrs[p.name] = append(pods[p.name], pod), append(ctrs[p.name], ctr)
		}
	}
	time.Sleep(2 * time.Second)
	for i := 0; i < 200; i++ {
		for _, p := range peers {
			l, pod, ctr := lat[p.name], pods[p.name][i%10], ctrs[p.name][i%10]
			must(b, "ListPodSandbox", l.time("ListPodSandbox", func() error {
				_, err := p.c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
				return err
			}))
			must(b, "ListContainers", l.time("ListContainers", func() error {
				_, err := p.c.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
				return err
			}))
			must(b, "PodSandboxStatus", l.time("PodSandboxStatus", func() error {
				_, err := p.c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: pod})
				return err
			}))
			must(b, "ContainerStatus", l.time("ContainerStatus", func() error {
				_, err := p.c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctr})
				return err
			}))
			must(b, "ListContainerStats", l.time("ListContainerStats", func() error {
				_, err := p.c.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{})
				return err
			}))
			must(b, "ListPodSandboxStats", l.time("ListPodSandboxStats", func() error {
				_, err := p.c.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{})
				return err
			}))
			must(b, "Status", l.time("Status", func() error {
				_, err := p.c.Status(ctx, &runtimeapi.StatusRequest{})
				return err
			}))
		}
	}
	time.Sleep(2 * time.Second)
	busy := map[string]int{} // RSS at 10 pods, the calls done
	for _, p := range peers {
		busy[p.name] = smapsKB(p.pid, "Rss")
	}
	time.Sleep(17 * time.Second) // the pods idle: an idle rkt supervisor goes lean after 15 s
	podPSS := map[string]int{}
	for _, p := range peers {
		sum := 0
		for _, id := range pods[p.name] {
			sum += p.podPSS(b, p.c, id)
		}
		podPSS[p.name] = sum / len(pods[p.name])
	}
	return podPSS, busy
}

// lifecycleRound runs a pod with a container through its whole life,
// timing each RPC.
func lifecycleRound(b *testing.B, p *peer, lat latencies, name, logDir string) {
	ctx := context.Background()
	pc := p.podConfig(name, logDir)
	var podID, ctrID string
	steps := []struct {
		name string
		f    func() error
	}{
		{"RunPodSandbox", func() error {
			r, err := p.c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
			if err == nil {
				podID = r.PodSandboxId
			}
			return err
		}},
		{"CreateContainer", func() error {
			r, err := p.c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podID,
				Config: containerConfig("bench", p.imgID, "sleep", "100000"), SandboxConfig: pc})
			if err == nil {
				ctrID = r.ContainerId
			}
			return err
		}},
		{"StartContainer", func() error {
			_, err := p.c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctrID})
			return err
		}},
		{"ExecSync", func() error {
			_, err := p.c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ctrID, Cmd: []string{"true"}, Timeout: 10})
			return err
		}},
		{"StopContainer", func() error {
			_, err := p.c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: ctrID, Timeout: 10})
			return err
		}},
		{"RemoveContainer", func() error {
			_, err := p.c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ctrID})
			return err
		}},
		{"StopPodSandbox", func() error {
			_, err := p.c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID})
			return err
		}},
		{"RemovePodSandbox", func() error {
			_, err := p.c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID})
			return err
		}},
	}
	for _, s := range steps {
		if err := lat.time(s.name, s.f); err != nil {
			b.Fatalf("%s %s: %v", p.name, s.name, err)
		}
	}
}

// crictlRun runs `crictl runp`, `create` and `start` for a pod named name.
func crictlRun(b *testing.B, p *peer, name, logDir string) error {
	dir := b.TempDir()
	pod := p.podConfig(name, logDir)
	ctr := containerConfig("c", p.imgID, "sleep", "100000")
	write := func(file string, v any) string {
		bs, err := json.Marshal(v)
		must(b, "marshal", err)
		path := filepath.Join(dir, file)
		must(b, "write", os.WriteFile(path, bs, 0o644))
		return path
	}
	podJSON, ctrJSON := write("pod.json", pod), write("ctr.json", ctr)
	run := func(args ...string) (string, error) {
		full := append([]string{"--runtime-endpoint", p.ep, "--image-endpoint", p.ep, "--timeout", "60s"}, args...)
		cmd := exec.Command(toolPath(b, "crictl"), full...)
		cmd.Env = append(os.Environ(), "CRI_CONFIG_FILE=/dev/null")
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("crictl %s: %w", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	podID, err := run("runp", podJSON)
	if err != nil {
		return err
	}
	ctrID, err := run("create", podID, ctrJSON, podJSON)
	if err != nil {
		return err
	}
	_, err = run("start", ctrID)
	return err
}
