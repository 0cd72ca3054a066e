package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"
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
	ref    bool // a peer of issue 10's goals (a containerd), not a build of rkt
	c      *criClient
	ep     string // unix:// endpoint for crictl
	pid    int    // the daemon
	imgID  string
	podPSS func(testing.TB, *criClient, string) int
	// cgroupParent of its pods ("": the runtime's default); the kubelet
	// always gives one, and containerd 1.6 has no pod stats without it
	cgroupParent string
	idleSince    time.Time // the end of its last turn (idleTurn)
}

// turnIdle is how long every peer has been idle when its turn of the call
// rounds begins: more than the other peers' turns take together, so that
// the first call of a turn pays the same wake-up of an idle server on
// every peer (the longer a Go server sleeps, the more its first call
// costs: ~0.2 ms back to back, ~1.2 ms after 30 ms here, for rkt and the
// containerds alike). Before, a peer's idle time was the others' turns,
// longest for the fastest peer.
const turnIdle = 200 * time.Millisecond

// idleTurn waits until p has been idle for turnIdle, runs its turn and
// marks when the turn ended.
func (p *peer) idleTurn(turn func()) {
	if w := turnIdle - time.Since(p.idleSince); w > 0 {
		time.Sleep(w)
	}
	turn()
	p.idleSince = time.Now()
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

// BenchmarkCRIVsContainerd measures the kubelet-service and the containerds
// side by side in one run, their calls interleaved so that the machine's
// drift hits all: the pod and container lifecycle per RPC (p50 of 20
// rounds), crictl runp+create+start as processes, List*/Status at 10
// running pods, the daemon's RSS (idle after a pull and a minute of an
// empty node's calls, and at 10 pods after the calls)
// and each pod's own memory (PSS of rkt's supervisor and namespace
// holder; of containerd's shim and pause).
// The containerds are Debian's (1.6, runc) and 2.4.2 with crun, each when
// installed (.ci/install-bench-deps; make bench runs it), or those
// RKT_BENCH_PEERS names (containerd,containerd2). It prints one table with
// rkt's ratio to each and to the best (lowest p50) and issue 10's goals.
func BenchmarkCRIVsContainerd(b *testing.B) {
	requireRoot(b)
	dists := benchContainerds(b)
	env := testutil.NewEnv(b)
	reg := testutil.StartRegistry(b)
	ref, pauseRef := pushPeerImages(b, reg)
	// RKT_BENCH_SVC_LOG=file keeps the service's log there, at debug level
	// (and the crictl pods' stage1 logs in file.stage1);
	// RKT_BENCH_ONLY=crictl measures crictl runp+create+start alone
	// (RKT_BENCH_CRICTL_ROUNDS rounds, default 10), =lifecycle the
	// lifecycle rounds alone, =pulls the image pulls alone, =burst the
	// bursts of 10 pods alone.
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
	measures := func(part string) bool { return only == "" || only == part }
	crictlRounds := 10
	if s := os.Getenv("RKT_BENCH_CRICTL_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("RKT_BENCH_CRICTL_ROUNDS: bad count %q", s)
		}
		crictlRounds = n
	}
	logDir := b.TempDir() // made before the peers: removed after their pods
	peers := []*peer{{name: "rkt", c: dialCRI(b, svc), ep: svc.Endpoint, pid: svc.cmd.Process.Pid, podPSS: rktPodPSS}}
	var versions []string
	for _, d := range dists {
		cd := startContainerdDist(b, d, reg.Addr, pauseRef)
		peers = append(peers, &peer{name: d.name, ref: true, c: cd.client(b), ep: "unix://" + cd.Socket, pid: cd.Pid(),
			podPSS: containerdPodPSS, cgroupParent: cd.cgroupParent})
		versions = append(versions, d.name+" = "+d.version())
	}
	// RKT_BENCH_BASE=dir adds the rkt and stage1 of dir (another build) as
	// a peer, rkt-base, measured in the same rounds (its logs, with
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
	// idle as under a kubelet: an empty node's calls for a minute
	for _, p := range peers {
		emptyNodeCalls(b, p.c, 60)
	}
	time.Sleep(time.Second)
	idle := map[string]int{}
	for _, p := range peers {
		idle[p.name] = smapsKB(p.pid, "Rss")
	}
	lat := map[string]latencies{}
	for _, p := range peers {
		lat[p.name] = latencies{}
	}

	// the lifecycle, one round on each in turn
	for i := 0; i < 20 && measures("lifecycle"); i++ {
		for _, p := range inTurn(peers, i) {
			lifecycleRound(b, p, lat[p.name], fmt.Sprintf("vs-%s-%d", p.name, i), logDir)
		}
	}

	// crictl runp+create+start, as the processes a user runs
	for i := 0; i < crictlRounds && measures("crictl"); i++ {
		for _, p := range inTurn(peers, i) {
			must(b, p.name+" crictl", lat[p.name].time("crictl runp+create+start", func() error {
				return crictlRun(b, p, fmt.Sprintf("vs-crictl-%s-%d", p.name, i), logDir)
			}))
		}
	}
	if measures("burst") {
		measureBursts(b, peers, lat, logDir, 3)
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
		podPSS, busy = measureTenPods(b, peers, lat, logDir, ref)
	}
	if measures("pulls") {
		measurePulls(b, peers, lat, reg, 10)
	}
	fmt.Printf("BenchmarkCRIVsContainerd: this tree vs %s; same host, same run (ms: p50, p99; memory: KiB):\n",
		strings.Join(versions, ", "))
	printVsTable(b, peers, lat, idle, busy, podPSS)
}

// inTurn is peers in the order of round i: rotated by one each round, so
// that every peer is first, second... in turn (a call's time depends on
// what the machine did just before it: the first call of a turn wakes an
// idle server, the others follow its own calls).
func inTurn(peers []*peer, i int) []*peer {
	k := i % len(peers)
	return append(slices.Clone(peers[k:]), peers[:k]...)
}

// benchContainerds returns the containerds to measure rkt against
// (peerContainerds); it skips b when none is installed.
func benchContainerds(b *testing.B) []containerdDist {
	out := peerContainerds(b)
	if len(out) == 0 {
		b.Skip("no containerd is installed (.ci/install-bench-deps)")
	}
	return out
}

// peerContainerds returns the containerds RKT_BENCH_PEERS names
// (comma-separated), by default each one installed.
func peerContainerds(b *testing.B) []containerdDist {
	d2, ok2 := containerd2()
	known := map[string]containerdDist{"containerd": debianContainerd(), "containerd2": d2}
	installed := map[string]bool{"containerd": containerdVersion() != "", "containerd2": ok2}
	names := []string{"containerd", "containerd2"}
	explicit := os.Getenv("RKT_BENCH_PEERS")
	if explicit != "" {
		names = strings.Split(explicit, ",")
	}
	var out []containerdDist
	for _, n := range names {
		if _, ok := known[n]; !ok {
			b.Fatalf("RKT_BENCH_PEERS: unknown peer %q (containerd, containerd2)", n)
		}
		switch {
		case installed[n]:
			out = append(out, known[n])
		case explicit != "":
			b.Fatalf("RKT_BENCH_PEERS: %s is not installed (.ci/install-bench-deps)", n)
		default:
			b.Logf("%s is not installed (.ci/install-bench-deps installs it): left out", n)
		}
	}
	return out
}

// vsGoals are issue 10's goals on latency rows: rkt's p50 at most this
// times the best peer's. Every other call's is its title's: faster than
// the best peer (1x).
var vsGoals = map[string]float64{
	"ListPodSandbox": 1, "ListContainers": 1, "PodSandboxStatus": 1, "ContainerStatus": 1,
	"ListContainerStats": 1, "ListPodSandboxStats": 1, "Status": 1,
	"StopPodSandbox": 1, "RemoveContainer": 1, "crictl runp+create+start": 0.5,
}

// Issue 10's memory goals, KiB.
const (
	goalPodPSSKB  = 1536
	goalIdleRSSKB = 16384
)

// printVsTable prints p50 and p99 of each runtime on each row, rkt's ratio
// to the best peer (the lowest p50 of the containerds), to each peer and
// to rkt-base, and whether rkt meets the row's goal; then the memory rows.
func printVsTable(b *testing.B, peers []*peer, lat map[string]latencies, idle, busy, podPSS map[string]int) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	defer w.Flush()
	head := []string{fmt.Sprintf("%-26s", "call")}
	for _, p := range peers {
		head = append(head, p.name+" p50", "p99")
	}
	head = append(head, "rkt/best")
	for _, p := range peers[1:] {
		head = append(head, "rkt/"+p.name)
	}
	fmt.Fprintln(w, "  "+strings.Join(append(head, "goal"), "\t")+"\t")
	// row prints a row of values per peer (p99s: nil when none) and
	// returns rkt's ratio to the best peer.
	row := func(name string, val, p99 map[string]float64, goal string, pass func(ratio float64) bool) float64 {
		cells, best := []string{fmt.Sprintf("%-26s", name)}, 0.0
		for _, p := range peers {
			v, ok := val[p.name]
			switch {
			case !ok: // a call the peer does not implement
				cells = append(cells, "-", "-")
				continue
			case p99 == nil:
				cells = append(cells, fmt.Sprintf("%.0f", v), "-")
			default:
				cells = append(cells, fmt.Sprintf("%.2f", v), fmt.Sprintf("%.2f", p99[p.name]))
			}
			if p.ref && (best == 0 || v < best) {
				best = v
			}
		}
		ratio := val["rkt"] / best
		cells = append(cells, fmt.Sprintf("%.2f", ratio))
		for _, p := range peers[1:] {
			if v, ok := val[p.name]; ok {
				cells = append(cells, fmt.Sprintf("%.2f", val["rkt"]/v))
			} else {
				cells = append(cells, "-")
			}
		}
		if goal != "" {
			verdict := "FAIL"
			if pass(ratio) {
				verdict = "ok"
			}
			goal += " " + verdict
		}
		fmt.Fprintln(w, "  "+strings.Join(append(cells, goal), "\t")+"\t")
		return ratio
	}
	rows := []string{"RunPodSandbox", "CreateContainer", "StartContainer", "ExecSync",
		"CreateContainer (seccomp)", "StartContainer (seccomp)", "ExecSync (seccomp)", "StopContainer",
		"RemoveContainer", "StopPodSandbox", "RemovePodSandbox", "crictl runp+create+start"}
	rows = append(rows, burstCalls...)
	rows = append(rows, "ListPodSandbox", "ListContainers", "PodSandboxStatus", "ContainerStatus",
		"ListContainerStats", "ListPodSandboxStats", "Status")
	for _, name := range append(append(rows, otherCalls...), pullCalls...) {
		// a row needs rkt's times and a reference peer's
		p50, p99, ref := map[string]float64{}, map[string]float64{}, false
		for _, p := range peers {
			if l := lat[p.name][name]; len(l) > 0 {
				p50[p.name], p99[p.name] = ms(percentile(l, 50)), ms(percentile(l, 99))
				ref = ref || p.ref
			}
		}
		if _, ok := p50["rkt"]; !ok || !ref {
			continue
		}
		f, ok := vsGoals[name]
		if !ok {
			f = 1
		}
		goal, pass := fmt.Sprintf("<=%gx best", f), func(r float64) bool { return r <= f }
		ratio := row(name, p50, p99, goal, pass)
		metric := strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(name)
		for _, p := range peers {
			if v, ok := p50[p.name]; ok {
				b.ReportMetric(v, metric+"-"+p.name+"-p50-ms")
			}
		}
		b.ReportMetric(ratio, metric+"-ratio-best")
	}
	if len(podPSS) == 0 {
		return
	}
	kib := func(m map[string]int) map[string]float64 {
		out := map[string]float64{}
		for k, v := range m {
			out[k] = float64(v)
		}
		return out
	}
	row("daemon idle RSS", kib(idle), nil, fmt.Sprintf("rkt<=%d", goalIdleRSSKB),
		func(float64) bool { return idle["rkt"] <= goalIdleRSSKB })
	row("daemon RSS, 10 pods", kib(busy), nil, "", nil)
	row("per-pod PSS", kib(podPSS), nil, fmt.Sprintf("rkt<=%d", goalPodPSSKB),
		func(float64) bool { return podPSS["rkt"] <= goalPodPSSKB })
	b.ReportMetric(float64(idle["rkt"])/1024, "rkt-idle-rss-MiB")
	b.ReportMetric(float64(busy["rkt"])/1024, "rkt-10pods-rss-MiB")
	for _, p := range peers {
		b.ReportMetric(float64(podPSS[p.name])/1024, p.name+"-pod-pss-MiB")
	}
}

// measureTenPods times the List/Status/Stats calls at 10 running pods of
// each peer (each turn after turnIdle) and returns each peer's mean per-pod PSS and its daemon's RSS
// at 10 pods, the calls done (KiB); then it times the other calls
// (measureOtherCalls) on those pods.
func measureTenPods(b *testing.B, peers []*peer, lat map[string]latencies, logDir, ref string) (map[string]int, map[string]int) {
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
		for _, p := range inTurn(peers, i) {
			p.idleTurn(func() { tenPodCalls(b, p, lat[p.name], pods[p.name][i%10], ctrs[p.name][i%10]) })
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
	measureOtherCalls(b, peers, lat, pods, ctrs, ref, 50)
	return podPSS, busy
}

// tenPodCalls is one turn of the List*/Status/Stats rounds at 10 pods on p.
func tenPodCalls(b *testing.B, p *peer, l latencies, pod, ctr string) {
	ctx := context.Background()
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

// burstCalls are the rows of measureBursts.
var burstCalls = []string{"10 pods started at once", "10 pods removed at once"}

// measureBursts times, rounds times on each peer in turn, 10 pods with a
// container each started by 10 clients at once (RunPodSandbox,
// CreateContainer, StartContainer), then stopped and removed at once: the
// wall time of each burst, what a node sees when a deployment scales up
// or a node comes back with its pods.
func measureBursts(b *testing.B, peers []*peer, lat map[string]latencies, logDir string, rounds int) {
	ctx := context.Background()
	for i := 0; i < rounds; i++ {
		for _, p := range inTurn(peers, i) {
			pods := make([]string, 10)
			must(b, p.name+" "+burstCalls[0], lat[p.name].time(burstCalls[0], func() error {
				var g errgroup.Group
				for j := range pods {
					g.Go(func() error {
						pc := p.podConfig(fmt.Sprintf("burst-%s-%d-%d", p.name, i, j), logDir)
						rp, err := p.c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
						if err != nil {
							return err
						}
						pods[j] = rp.PodSandboxId
						cc, err := p.c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rp.PodSandboxId,
							Config: containerConfig("sleeper", p.imgID, "sleep", "100000"), SandboxConfig: pc})
						if err != nil {
							return err
						}
						_, err = p.c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cc.ContainerId})
						return err
					})
				}
				return g.Wait()
			}))
			must(b, p.name+" "+burstCalls[1], lat[p.name].time(burstCalls[1], func() error {
				var g errgroup.Group
				for _, id := range pods {
					g.Go(func() error {
						if _, err := p.c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
							return err
						}
						_, err := p.c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
						return err
					})
				}
				return g.Wait()
			}))
		}
	}
}

// lifecycleStep is one call of lifecycleRound, timed in the row name
// (untimed when name is "").
type lifecycleStep struct {
	name string
	f    func() error
}

// lifecycleRound runs a pod with a container through its whole life,
// timing each RPC; a second container of the pod, under the runtime's
// default seccomp profile (as Pod Security's restricted level requires
// of every container), is created, started and exec'd into, its rows
// marked "(seccomp)", and removed untimed.
func lifecycleRound(b *testing.B, p *peer, lat latencies, name, logDir string) {
	ctx := context.Background()
	pc := p.podConfig(name, logDir)
	var podID, ctrID, confinedID string
	// containerSteps create, start and exec into a container made from cfg
	containerSteps := func(suffix string, cfg *runtimeapi.ContainerConfig, id *string) []lifecycleStep {
		return []lifecycleStep{
			{"CreateContainer" + suffix, func() error {
				r, err := p.c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pc})
				if err == nil {
					*id = r.ContainerId
				}
				return err
			}},
			{"StartContainer" + suffix, func() error {
				_, err := p.c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: *id})
				return err
			}},
			{"ExecSync" + suffix, func() error {
				_, err := p.c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: *id, Cmd: []string{"true"}, Timeout: 10})
				return err
			}},
		}
	}
	confined := containerConfig("confined", p.imgID, "sleep", "100000")
	confined.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
		Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}}
	steps := []lifecycleStep{{"RunPodSandbox", func() error {
		r, err := p.c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pc})
		if err == nil {
			podID = r.PodSandboxId
		}
		return err
	}}}
	steps = append(steps, containerSteps("", containerConfig("bench", p.imgID, "sleep", "100000"), &ctrID)...)
	steps = append(steps, containerSteps(" (seccomp)", confined, &confinedID)...)
	steps = append(steps, []lifecycleStep{
		{"", func() error { // the pod's calls below stop one container, as before
			if _, err := p.c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: confinedID, Timeout: 10}); err != nil {
				return err
			}
			_, err := p.c.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: confinedID})
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
	}...)
	for _, s := range steps {
		var err error
		if s.name == "" {
			err = s.f()
		} else {
			err = lat.time(s.name, s.f)
		}
		if err != nil {
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
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			return "", fmt.Errorf("crictl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(stderr)))
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
