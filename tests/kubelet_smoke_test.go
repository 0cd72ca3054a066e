package tests

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// kubeletSysctls are the sysctls a kubelet sets at start.
var kubeletSysctls = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic",
	"kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

// kubelet is a standalone kubelet (static pods, no API server) started by a
// test against a CRI endpoint.
type kubelet struct {
	t         testing.TB
	Root      string // --root-dir
	Manifests string // static pod directory
	NodeName  string
	// Ports on 127.0.0.1 (free ones, not the defaults, so that a node e2e
	// run may go on meanwhile).
	HealthzPort, Port, ReadOnlyPort int
	logPath                         string
	cmd                             *exec.Cmd
	done                            chan struct{}
}

// startKubelet starts a standalone kubelet on the CRI endpoint and waits
// for its healthz; it is stopped at cleanup and the sysctls it changes are
// restored.
func startKubelet(t testing.TB, endpoint, root string) *kubelet {
	t.Helper()
	bin := toolPath(t, "kubelet")
	k := &kubelet{t: t, Root: root, Manifests: filepath.Join(root, "manifests"), NodeName: "rkt-smoke",
		logPath:     filepath.Join(root, "kubelet.log"),
		HealthzPort: freePort(t), Port: freePort(t), ReadOnlyPort: freePort(t)}
	if err := os.MkdirAll(k.Manifests, 0o700); err != nil {
		t.Fatal(err)
	}
	// No QoS cgroups: pods go under the service's cgroup parent, which the
	// test removes. The thresholds keep a busy CI disk from evicting pods.
	// cAdvisor knows only containerd's and CRI-O's pods: the kubelet takes
	// pod stats (network above all) from the CRI with
	// PodAndContainerStatsFromCRI.
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
healthzBindAddress: 127.0.0.1
healthzPort: %d
port: %d
readOnlyPort: %d
staticPodPath: %s
podLogsDir: %s
containerRuntimeEndpoint: %s
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failCgroupV1: false
failSwapOn: false
oomScoreAdj: 0
protectKernelDefaults: false
fileCheckFrequency: 1s
syncFrequency: 2s
housekeepingInterval: 2s
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
evictionHard: {memory.available: 1Mi, nodefs.available: 1%%, imagefs.available: 1%%, nodefs.inodesFree: 1%%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
featureGates: {PodAndContainerStatsFromCRI: true}
`, k.HealthzPort, k.Port, k.ReadOnlyPort, k.Manifests, filepath.Join(root, "logs"), endpoint)
	cfgPath := filepath.Join(root, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	restore := saveSysctls(t, kubeletSysctls...)
	t.Cleanup(restore)
	logf, err := os.Create(k.logPath)
	if err != nil {
		t.Fatal(err)
	}
	k.cmd = exec.Command(bin, "--config="+cfgPath, "--root-dir="+root, "--hostname-override="+k.NodeName,
		"--cert-dir="+filepath.Join(root, "pki"), "--v=2")
	k.cmd.Stdout, k.cmd.Stderr = logf, logf
	if err := k.cmd.Start(); err != nil {
		t.Fatalf("cannot start kubelet: %v", err)
	}
	logf.Close()
	k.done = make(chan struct{})
	go func() { k.cmd.Wait(); close(k.done) }()
	t.Cleanup(k.stop)
	k.waitFor("healthz", time.Minute, func() error {
		_, err := k.get(fmt.Sprintf("http://127.0.0.1:%d/healthz", k.HealthzPort))
		return err
	})
	return k
}

// stop stops the kubelet (SIGTERM, then SIGKILL) and unmounts its root dir
// (the kubelet bind-mounts it onto itself) and what is mounted under it.
func (k *kubelet) stop() {
	k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
	case <-time.After(20 * time.Second):
		k.cmd.Process.Kill()
		<-k.done
	}
	if k.t.Failed() {
		b, _ := os.ReadFile(k.logPath)
		k.t.Logf("kubelet log (%s):\n%s", k.logPath, tail(string(b), 150))
	}
	exec.Command("umount", "-R", k.Root).Run()
	for i := 0; i < 5 && syscall.Unmount(k.Root, syscall.MNT_DETACH) == nil; i++ {
	}
}

// url is an URL of the kubelet on 127.0.0.1.
func (k *kubelet) url(scheme string, port int, path string) string {
	return fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, port, path)
}

// get returns the body of an HTTP(S) GET on the kubelet (self-signed TLS).
func (k *kubelet) get(url string) ([]byte, error) {
	c := &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return b, nil
}

// waitFor polls f until it returns nil, failing the test after d.
func (k *kubelet) waitFor(what string, d time.Duration, f func() error) {
	k.t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case <-k.done:
			k.t.Fatalf("kubelet exited while waiting for %s (%v)", what, err)
		default:
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("%s: not within %s: %v", what, d, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kubeletPod is the part of a v1.Pod the test reads from /pods.
type kubeletPod struct {
	Metadata struct{ Name, Namespace, UID string }
	Status   struct {
		Phase             string
		PodIP             string
		ContainerStatuses []struct {
			Name         string
			Ready        bool
			RestartCount int
			State        struct{ Running *struct{ StartedAt string } }
		}
	}
}

// pod returns the pod named name from the kubelet's /pods, or nil.
func (k *kubelet) pod(name string) (*kubeletPod, error) {
	b, err := k.get(k.url("http", k.ReadOnlyPort, "/pods"))
	if err != nil {
		return nil, err
	}
	var list struct{ Items []kubeletPod }
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("cannot parse /pods: %w", err)
	}
	for i := range list.Items {
		if list.Items[i].Metadata.Name == name {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// kubeletOnRkt starts a kubelet-service (with args), a registry holding
// busybox as repo (returned: its reference) and a standalone kubelet on
// the service. The kubelet removes stopped sandboxes only in its container
// GC; removeAllPods stands in for it at cleanup, before the leak check.
func kubeletOnRkt(t *testing.T, repo string, args ...string) (*criClient, *kubelet, string) {
	t.Helper()
	requireRoot(t)
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	ref := reg.Push(t, repo, testutil.Busybox(t))
	svc := startCRIService(t, env, args...)
	c := dialCRI(t, svc)
	t.Cleanup(func() { removeAllPods(t, c) })
	return c, startKubelet(t, svc.Endpoint, filepath.Join(env.Root, "kubelet")), ref
}

// TestKubeletSmoke runs a standalone kubelet against rkt kubelet-service
// with a static pod: it runs, gets an IP, its logs are readable through the
// kubelet, a failing exec liveness probe restarts its container, the
// kubelet's /stats/summary has pod and container stats, and removing the
// manifest stops the pod, which is then removed with nothing left behind.
func TestKubeletSmoke(t *testing.T) {
	c, k, ref := kubeletOnRkt(t, "smoke/busybox:1")

	// The first run of the container never becomes healthy, so the
	// liveness probe restarts it; the second run (marked on the emptyDir,
	// which outlives the container) does.
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: smoke, namespace: default}
spec:
  terminationGracePeriodSeconds: 2
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: app
    image: %s
    command: [sh, -c, 'echo smoke-hello; if [ -e /data/once ]; then touch /tmp/healthy; fi; touch /data/once; trap "exit 0" TERM; sleep 3600 & wait']
    volumeMounts: [{name: data, mountPath: /data}]
    livenessProbe:
      exec: {command: [cat, /tmp/healthy]}
      periodSeconds: 1
      failureThreshold: 1
`, ref)
	manifestPath := filepath.Join(k.Manifests, "smoke.yaml")
	start := time.Now()
	if err := os.WriteFile(manifestPath, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	name := "smoke-" + k.NodeName
	var p *kubeletPod
	k.waitFor("pod running with one liveness restart", 90*time.Second, func() error {
		var err error
		if p, err = k.pod(name); err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("no pod %s in /pods", name)
		}
		cs := p.Status.ContainerStatuses
		if p.Status.Phase != "Running" || len(cs) != 1 || cs[0].State.Running == nil || cs[0].RestartCount < 1 {
			return fmt.Errorf("pod status %+v", p.Status)
		}
		return nil
	})
	t.Logf("static pod running after a liveness restart in %s", time.Since(start).Round(time.Millisecond))
	if ip := net.ParseIP(p.Status.PodIP); ip == nil || ip.IsLoopback() {
		t.Errorf("pod IP %q, want a pod network address", p.Status.PodIP)
	}

	logs, err := k.get(k.url("https", k.Port, "/containerLogs/default/"+name+"/app"))
	if err != nil || !strings.Contains(string(logs), "smoke-hello") {
		t.Errorf("container logs through the kubelet: %q, %v", logs, err)
	}
	prev, err := k.get(k.url("https", k.Port, "/containerLogs/default/"+name+"/app?previous=true"))
	if err != nil || !strings.Contains(string(prev), "smoke-hello") {
		t.Errorf("logs of the restarted container: %q, %v", prev, err)
	}

	k.waitFor("pod and container stats in /stats/summary", time.Minute, func() error {
		b, err := k.get(k.url("http", k.ReadOnlyPort, "/stats/summary"))
		if err != nil {
			return err
		}
		return checkSummary(b, name)
	})

	t.Logf("stats in /stats/summary after %s", time.Since(start).Round(time.Millisecond))
	// Container metrics come from the CRI (ListPodSandboxMetrics) with the
	// names and labels of cAdvisor's, as the node conformance spec of
	// /metrics/cadvisor expects.
	k.waitFor("container metrics in /metrics/cadvisor", time.Minute, func() error {
		b, err := k.get(k.url("http", k.ReadOnlyPort, "/metrics/cadvisor"))
		if err != nil {
			return err
		}
		for _, m := range []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
			"container_memory_events_max_total", "container_spec_memory_reservation_limit_bytes", "container_ulimits_soft"} {
			if !hasMetric(string(b), m, `container="app"`, `pod="`+name+`"`) {
				return fmt.Errorf("no %s of container app of pod %s:\n%s", m, name, b)
			}
		}
		return nil
	})
	if err := os.Remove(manifestPath); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	// The kubelet stops the pod at once; it removes stopped sandboxes only
	// in its container GC (every minute), which the cleanup stands in for.
	k.waitFor("pod stopped", time.Minute, func() error {
		p, err := k.pod(name)
		if err != nil {
			return err
		}
		if p != nil {
			return fmt.Errorf("pod still in /pods: %+v", p.Status)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			return err
		}
		for _, s := range l.Items {
			if s.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
				return fmt.Errorf("sandbox %s is %s", s.Id, s.State)
			}
		}
		cl, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		if err != nil {
			return err
		}
		for _, ct := range cl.Containers {
			if ct.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				return fmt.Errorf("container %s still running", ct.Id)
			}
		}
		return nil
	})
	t.Logf("pod stopped %s after its manifest was removed", time.Since(removed).Round(time.Millisecond))
}

// checkSummary checks that a /stats/summary document has CPU, memory,
// network and ephemeral storage stats for the pod and CPU, memory, rootfs
// and log stats for each of its containers.
func checkSummary(b []byte, pod string) error {
	type fs struct{ UsedBytes, CapacityBytes *uint64 }
	type cpu struct {
		UsageCoreNanoSeconds *uint64
		PSI                  *struct{ Some, Full struct{ Total uint64 } }
	}
	type mem struct {
		WorkingSetBytes *uint64
		PSI             *struct{ Some, Full struct{ Total uint64 } }
	}
	var s struct {
		Pods []struct {
			PodRef  struct{ Name string }
			CPU     *cpu
			Memory  *mem
			Network *struct{ Interfaces []struct{ Name string } }
			Storage *fs `json:"ephemeral-storage"`
			Conts   []struct {
				Name   string
				CPU    *cpu
				Memory *mem
				Rootfs *fs
				Logs   *fs
			} `json:"containers"`
		}
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("cannot parse /stats/summary: %w", err)
	}
	for _, p := range s.Pods {
		if p.PodRef.Name != pod {
			continue
		}
		switch {
		case p.CPU == nil || p.CPU.UsageCoreNanoSeconds == nil:
			return fmt.Errorf("pod %s has no CPU stats: %s", pod, b)
		case p.Memory == nil || p.Memory.WorkingSetBytes == nil:
			return fmt.Errorf("pod %s has no memory stats: %s", pod, b)
		case p.Network == nil || len(p.Network.Interfaces) == 0:
			return fmt.Errorf("pod %s has no network stats: %s", pod, b)
		case p.Storage == nil || p.Storage.UsedBytes == nil:
			return fmt.Errorf("pod %s has no ephemeral storage stats: %s", pod, b)
		case len(p.Conts) == 0:
			return fmt.Errorf("pod %s has no container stats: %s", pod, b)
		}
		for _, c := range p.Conts {
			if c.CPU == nil || c.CPU.UsageCoreNanoSeconds == nil || c.Memory == nil || c.Memory.WorkingSetBytes == nil ||
				c.Rootfs == nil || c.Rootfs.UsedBytes == nil || c.Logs == nil || c.Logs.UsedBytes == nil {
				return fmt.Errorf("container %s of pod %s lacks CPU, memory, rootfs or log stats: %s", c.Name, pod, b)
			}
			if hostHasCgroupPSI() && (c.CPU.PSI == nil || c.Memory.PSI == nil || p.CPU.PSI == nil) {
				return fmt.Errorf("container %s of pod %s lacks pressure (PSI) stats: %s", c.Name, pod, b)
			}
		}
		return nil
	}
	return fmt.Errorf("no pod %s in /stats/summary", pod)
}

// hostHasCgroupPSI reports whether cgroups here have pressure files: the
// kernel has PSI and a unified hierarchy is mounted (alone or beside v1).
func hostHasCgroupPSI() bool {
	for _, f := range []string{"/sys/fs/cgroup/cpu.pressure", "/sys/fs/cgroup/unified/cpu.pressure"} {
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	return false
}

// hasMetric reports whether a Prometheus text exposition has a sample of
// metric whose labels include each of labels.
func hasMetric(text, metric string, labels ...string) bool {
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, metric+"{") {
			continue
		}
		all := true
		for _, want := range labels {
			all = all && strings.Contains(l, want)
		}
		if all {
			return true
		}
	}
	return false
}
