package kubeletsvc

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/sysctl"
)

func mustMarshal(f testing.TB, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzTranslateContainer feeds arbitrary container configs (protobuf
// bytes) and sandbox log directories to translateContainer: it never
// panics, and what it accepts has its log file inside the log directory,
// absolute mount paths and well-formed env.
func FuzzTranslateContainer(f *testing.F) {
	seeds := []*runtimeapi.ContainerConfig{
		{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}, LogPath: "c/0.log"},
		{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}, LogPath: "../../x"},
		{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}, LogPath: "/etc/x"},
		{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
			Envs: []*runtimeapi.KeyValue{{Key: "A", Value: []byte("1")}, {Key: "=", Value: []byte("x")}},
			Mounts: []*runtimeapi.Mount{
				{ContainerPath: "/m", HostPath: "rel/x", Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL},
				{ContainerPath: "/i", Image: &runtimeapi.ImageSpec{Image: "busybox"}, Readonly: true, ImageSubPath: "../x"},
			},
			Devices: []*runtimeapi.Device{{HostPath: "/dev/null", Permissions: "rw"}},
			Linux: &runtimeapi.LinuxContainerConfig{
				Resources: &runtimeapi.LinuxContainerResources{CpuShares: -1, OomScoreAdj: 2000, Unified: map[string]string{"../x": "1"}},
				SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
					RunAsUser:        &runtimeapi.Int64Value{Value: -1},
					NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_TARGET},
				},
			}},
	}
	for _, s := range seeds {
		f.Add(mustMarshal(f, s), "/var/log/pods/p")
	}
	f.Add([]byte{}, "logs")
	f.Fuzz(func(t *testing.T, data []byte, logDir string) {
		cfg := &runtimeapi.ContainerConfig{}
		if proto.Unmarshal(data, cfg) != nil {
			return
		}
		plan, err := translateContainer(&runtimeapi.PodSandboxConfig{LogDirectory: logDir}, cfg)
		if err != nil {
			return
		}
		o := plan.opts
		if o.LogPath != "" {
			dir := filepath.Clean(logDir)
			if !filepath.IsAbs(o.LogPath) || !strings.HasPrefix(o.LogPath, dir+"/") && dir != "/" {
				t.Fatalf("log path %q is outside the log directory %q", o.LogPath, logDir)
			}
		}
		for i, m := range o.Mounts {
			if !filepath.IsAbs(m.Destination) || m.Image == "" && !filepath.IsAbs(m.Source) {
				t.Fatalf("mount %d has a relative path: %+v", i, m)
			}
			if m.Propagation != "private" && m.Propagation != "rslave" && m.Propagation != "rshared" {
				t.Fatalf("mount %d: propagation %q", i, m.Propagation)
			}
			if m.SubPath != "" && (!filepath.IsAbs(m.SubPath) || slices.Contains(strings.Split(m.SubPath, "/"), "..")) {
				t.Fatalf("mount %d: image sub path %q", i, m.SubPath)
			}
		}
		for _, kv := range o.Env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.ContainsRune(kv, 0) {
				t.Fatalf("env entry %q", kv)
			}
		}
		if r := o.Resources; r != nil && r.CPU != nil && r.CPU.Quota != nil && *r.CPU.Quota < -1 {
			t.Fatalf("cpu quota %d", *r.CPU.Quota)
		}
		if o.OOMScoreAdj != nil && (*o.OOMScoreAdj < -1000 || *o.OOMScoreAdj > 1000) {
			t.Fatalf("oom score adj %d", *o.OOMScoreAdj)
		}
	})
}

// FuzzTranslateSandbox feeds arbitrary sandbox configs to translateSandbox:
// no panic, and what it accepts has an absolute log directory, namespaced
// well-formed sysctls and valid ports.
func FuzzTranslateSandbox(f *testing.F) {
	seeds := []*runtimeapi.PodSandboxConfig{
		{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"}, LogDirectory: "/var/log/pods/p"},
		{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"}, LogDirectory: "logs", Hostname: "h",
			DnsConfig:    &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1"}, Searches: []string{"a\nb"}},
			PortMappings: []*runtimeapi.PortMapping{{HostPort: 70000, ContainerPort: 80, HostIp: "x"}},
			Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "/../x",
				Sysctls:   map[string]string{"net.ipv4.ip_forward": "1", "kernel.core_pattern": "|x", "net.a/../b": "1"},
				Resources: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: -1}}},
	}
	for _, s := range seeds {
		f.Add(mustMarshal(f, s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := &runtimeapi.PodSandboxConfig{}
		if proto.Unmarshal(data, cfg) != nil {
			return
		}
		opts, err := translateSandbox(cfg, "")
		if err != nil {
			return
		}
		if d := cfg.GetLogDirectory(); d != "" && !filepath.IsAbs(d) {
			t.Fatalf("relative log directory %q accepted", d)
		}
		for k, v := range opts.Sysctls {
			if err := sysctl.Check(k, v); err != nil {
				t.Fatalf("sysctl accepted: %v", err)
			}
		}
		for _, p := range opts.Ports {
			if p.HostPort < 1 || p.HostPort > 65535 || p.ContainerPort < 1 || p.ContainerPort > 65535 {
				t.Fatalf("port mapping %+v accepted", p)
			}
		}
	})
}

func manyEnvConfig(n int) *runtimeapi.ContainerConfig {
	cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}}
	for i := 0; i < n; i++ {
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: fmt.Sprintf("E_%d", i), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	return cfg
}

// TestTranslateContainerLinear checks that translating ten times the env
// entries costs about ten times as much (a quadratic step would cost 100).
func TestTranslateContainerLinear(t *testing.T) {
	cost := func(n int) time.Duration {
		cfg := manyEnvConfig(n)
		best := time.Duration(1 << 62)
		for i := 0; i < 7; i++ {
			start := time.Now()
			if _, err := translateContainer(&runtimeapi.PodSandboxConfig{}, cfg); err != nil {
				t.Fatal(err)
			}
			best = min(best, time.Since(start))
		}
		return best
	}
	small, large := cost(10000), cost(100000)
	t.Logf("10k env entries: %v, 100k: %v", small, large)
	// linear is ~10x; quadratic 100x. The bounds leave room for a loaded
	// machine (a GC or a preemption in the best of 7 runs).
	if large > 60*small && large > 200*time.Millisecond {
		t.Errorf("translating 100k env entries took %v, 10k %v: not linear", large, small)
	}
}

func BenchmarkTranslateContainerEnv100k(b *testing.B) {
	cfg := manyEnvConfig(100000)
	for b.Loop() {
		if _, err := translateContainer(&runtimeapi.PodSandboxConfig{}, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
