package kubeletsvc

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestRunPodSandbox(t *testing.T) {
	e := newTestEnv(t)
	cfg := sandboxConfig("web")
	cfg.Hostname = "web-host"
	cfg.PortMappings = []*runtimeapi.PortMapping{{ContainerPort: 80, HostPort: 8080}, {ContainerPort: 81}}
	cfg.DnsConfig = &runtimeapi.DNSConfig{Servers: []string{"10.0.0.10"}, Searches: []string{"svc.local"}}
	cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent: "/kubepods/pod1",
		Sysctls:      map[string]string{"net.ipv4.ip_forward": "1"},
		SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD},
		},
	}
	r, err := e.rs.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	id := r.GetPodSandboxId()
	if !uuidRE.MatchString(id) {
		t.Fatalf("sandbox ID %q is not a pod UUID", id)
	}
	opts := e.rt.podOpts[id]
	if opts.UUID != id || opts.Hostname != "web-host" || opts.Net != "default" || !opts.SharedPID || opts.HostPID ||
		opts.CgroupParent != "/kubepods/pod1" || !opts.OwnCgroupParent || opts.Sysctls["net.ipv4.ip_forward"] != "1" {
		t.Errorf("pod options %+v", opts)
	}
	if len(opts.Ports) != 1 || opts.Ports[0].HostPort != 8080 || opts.Ports[0].ContainerPort != 80 || opts.Ports[0].Protocol != "tcp" {
		t.Errorf("ports %+v, want only the published 8080->80/tcp", opts.Ports)
	}
	if opts.DNS == nil || !slices.Equal(opts.DNS.Servers, []string{"10.0.0.10"}) || !slices.Equal(opts.DNS.Searches, []string{"svc.local"}) {
		t.Errorf("DNS %+v", opts.DNS)
	}
	if opts.Annotations[annoKind] != kindSandbox || opts.Annotations[annoName] != "web" || opts.Annotations[annoNamespace] != "default" {
		t.Errorf("annotations %v lack the CRI metadata", opts.Annotations)
	}
}

func TestRunPodSandboxHostNetwork(t *testing.T) {
	e := newTestEnv(t)
	e.rt.netReady, e.rt.netWhy = false, "no CNI config"
	cfg := sandboxConfig("h")
	cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}}
	r, err := e.rs.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatalf("a host-network pod needs no pod network: %v", err)
	}
	host, _ := os.Hostname()
	if o := e.rt.podOpts[r.GetPodSandboxId()]; o.Net != stage0.NetHost || o.Hostname != host {
		t.Errorf("net %q hostname %q, want host and %q", o.Net, o.Hostname, host)
	} else if o.CgroupParent != "" || o.OwnCgroupParent {
		// no cgroup parent from the kubelet: the service's, shared
		t.Errorf("cgroup parent %q (own: %v), want the service's default", o.CgroupParent, o.OwnCgroupParent)
	}
}

func TestRunPodSandboxRefusedBeforeActing(t *testing.T) {
	withLinux := func(l *runtimeapi.LinuxPodSandboxConfig) *runtimeapi.PodSandboxConfig {
		c := sandboxConfig("p")
		c.Linux = l
		return c
	}
	for _, tc := range []struct {
		name    string
		cfg     *runtimeapi.PodSandboxConfig
		handler string
	}{
		{"no name", &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{}}, ""},
		{"unknown handler", sandboxConfig("p"), "kata"},
		{"relative log directory", &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"}, LogDirectory: "logs"}, ""},
		{"hostname with slash", &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"}, Hostname: "a/b"}, ""},
		// a newline would add lines to the pod's /etc/hosts and /etc/hostname
		{"hostname with newline", &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"}, Hostname: "h\n10.0.0.1 kubernetes.default"}, ""},
		{"hostname with blank", &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"}, Hostname: "a b"}, ""},
		{"cgroup parent escapes", withLinux(&runtimeapi.LinuxPodSandboxConfig{CgroupParent: "/kubepods/../x"}), ""},
		{"unknown sysctl", withLinux(&runtimeapi.LinuxPodSandboxConfig{Sysctls: map[string]string{"kernel.panic": "1"}}), ""},
		{"net sysctl on the host network", withLinux(&runtimeapi.LinuxPodSandboxConfig{
			Sysctls: map[string]string{"net.ipv4.ip_forward": "1"},
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}},
		}), ""},
		{"bad DNS server", &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"},
			DnsConfig: &runtimeapi.DNSConfig{Servers: []string{"dns.example"}}}, ""},
		{"port out of range", &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"},
			PortMappings: []*runtimeapi.PortMapping{{HostPort: 70000, ContainerPort: 80}}}, ""},
		{"unknown port protocol", &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"},
			PortMappings: []*runtimeapi.PortMapping{{Protocol: 7, HostPort: 8080, ContainerPort: 80}}}, ""},
		{"user namespace for a container", withLinux(&runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_CONTAINER}}}}), ""},
		{"user namespace mapping past 2^32", withLinux(&runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD,
				Uids: []*runtimeapi.IDMapping{{HostId: 1<<32 - 1, Length: 10}}, Gids: []*runtimeapi.IDMapping{{HostId: 100000, Length: 65536}}}}}}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			_, err := e.rs.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: tc.cfg, RuntimeHandler: tc.handler})
			wantCode(t, "RunPodSandbox", err, codes.InvalidArgument)
			if calls := e.rt.called(); len(calls) != 0 {
				t.Errorf("stage0 was called: %v", calls)
			}
		})
	}
}

func TestRunPodSandboxNetworkNotReady(t *testing.T) {
	e := newTestEnv(t)
	e.rt.netReady, e.rt.netWhy = false, "no CNI config in /etc/cni/net.d"
	_, err := e.rs.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("p")})
	wantCode(t, "RunPodSandbox", err, codes.FailedPrecondition)
	if calls := e.rt.called(); len(calls) != 0 {
		t.Errorf("stage0 was called: %v", calls)
	}
}

func TestRunPodSandboxUserNSUnsupported(t *testing.T) {
	e := newTestEnv(t)
	e.svc.usernsErr = errors.New("no idmapped mounts")
	cfg := sandboxConfig("p")
	m := []*runtimeapi.IDMapping{{HostId: 100000, ContainerId: 0, Length: 65536}}
	cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: m, Gids: m}}}}
	_, err := e.rs.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	wantCode(t, "RunPodSandbox", err, codes.FailedPrecondition)
}

func TestRunPodSandboxDuplicateName(t *testing.T) {
	e := newTestEnv(t)
	id := e.runPod(t, "web")
	_, err := e.rs.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("web")})
	wantCode(t, "second RunPodSandbox", err, codes.AlreadyExists)
	other := sandboxConfig("web")
	other.Metadata.Attempt = 1
	if _, err := e.rs.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: other}); err != nil {
		t.Fatalf("another attempt of the same pod: %v", err)
	}
	if _, err := e.rs.RemovePodSandbox(e.ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rs.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("web")}); err != nil {
		t.Fatalf("the name of a removed sandbox is free again: %v", err)
	}
}

// A failed start removes what it created and frees the name.
func TestRunPodSandboxFailureUndone(t *testing.T) {
	e := newTestEnv(t)
	e.rt.sandboxErr = fmt.Errorf("cannot write the pod manifest: %w", syscall.ENOSPC)
	_, err := e.rs.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("web")})
	wantCode(t, "RunPodSandbox on a full disk", err, codes.ResourceExhausted)
	if pods, _ := e.rt.List(e.ctx); len(pods) != 0 {
		t.Errorf("the failed pod is left: %v", pods[0].UUID)
	}
	e.rt.sandboxErr = nil
	if _, err := e.rs.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("web")}); err != nil {
		t.Fatalf("retry after the failure: %v", err)
	}
}
