package kubeletsvc

//lint:file-ignore SA1019 the deprecated seccomp path older kubelets send is tested

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/cgstats"
	"github.com/rkt/rkt/stage0"
)

func TestSeccompProfile(t *testing.T) {
	tests := []struct {
		sc      *runtimeapi.LinuxContainerSecurityContext
		want    string
		wantErr bool
	}{
		{&runtimeapi.LinuxContainerSecurityContext{}, stage0.SeccompUnconfined, false},
		{&runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}}, stage0.SeccompDefault, false},
		{&runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}}, stage0.SeccompUnconfined, false},
		{&runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/p.json"}}, "localhost//p.json", false},
		{&runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost}}, "", true},
		{&runtimeapi.LinuxContainerSecurityContext{SeccompProfilePath: "runtime/default"}, stage0.SeccompDefault, false},
		{&runtimeapi.LinuxContainerSecurityContext{SeccompProfilePath: "docker/default"}, stage0.SeccompDefault, false},
		{&runtimeapi.LinuxContainerSecurityContext{SeccompProfilePath: "localhost/x.json"}, "localhost/x.json", false},
		{&runtimeapi.LinuxContainerSecurityContext{SeccompProfilePath: "bogus"}, "", true},
	}
	for i, tc := range tests {
		got, err := seccompProfile(tc.sc)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%d: seccompProfile = %q, %v; want %q (err %v)", i, got, err, tc.want, tc.wantErr)
		}
		if err != nil && !errors.Is(err, errInvalidArgument) {
			t.Errorf("%d: error %v is not InvalidArgument", i, err)
		}
	}
}

func TestCapNames(t *testing.T) {
	got := capNames([]string{"net_admin", "CAP_SYS_TIME", "all", " chown "})
	want := []string{"CAP_NET_ADMIN", "CAP_SYS_TIME", "ALL", "CAP_CHOWN"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("capNames = %v, want %v", got, want)
	}
}

func TestAppMount(t *testing.T) {
	dir := "/srv/data"
	tests := []struct {
		name    string
		m       *runtimeapi.Mount
		want    stage0.Mount
		wantErr string // a field the error names
	}{
		{"private rw", &runtimeapi.Mount{ContainerPath: "/data", HostPath: dir},
			stage0.Mount{Source: dir, Destination: "/data", Propagation: "private"}, ""},
		{"rslave ro", &runtimeapi.Mount{ContainerPath: "/data", HostPath: dir, Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
			stage0.Mount{Source: dir, Destination: "/data", ReadOnly: true, Propagation: "rslave"}, ""},
		{"rshared", &runtimeapi.Mount{ContainerPath: "/data", HostPath: dir, Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL},
			stage0.Mount{Source: dir, Destination: "/data", Propagation: "rshared"}, ""},
		{"rro", &runtimeapi.Mount{ContainerPath: "/data", HostPath: dir, Readonly: true, RecursiveReadOnly: true},
			stage0.Mount{Source: dir, Destination: "/data", ReadOnly: true, RecursiveReadOnly: true, Propagation: "private"}, ""},
		{"rro without ro", &runtimeapi.Mount{ContainerPath: "/data", HostPath: dir, RecursiveReadOnly: true}, stage0.Mount{}, "recursive_read_only"},
		{"rro with rslave", &runtimeapi.Mount{ContainerPath: "/data", HostPath: dir, Readonly: true, RecursiveReadOnly: true,
			Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER}, stage0.Mount{}, "recursive_read_only"},
		{"relative destination", &runtimeapi.Mount{ContainerPath: "data", HostPath: dir}, stage0.Mount{}, "mounts[3].container_path"},
		{"relative host path", &runtimeapi.Mount{ContainerPath: "/m", HostPath: "made/by/us"}, stage0.Mount{}, "mounts[3].host_path"},
		{"no host path", &runtimeapi.Mount{ContainerPath: "/m"}, stage0.Mount{}, "mounts[3].host_path"},
		{"unknown propagation", &runtimeapi.Mount{ContainerPath: "/m", HostPath: dir, Propagation: 7}, stage0.Mount{}, "mounts[3].propagation"},
	}
	for _, tc := range tests {
		got, err := appMount(3, tc.m)
		if (err != nil) != (tc.wantErr != "") {
			t.Errorf("%s: err = %v, want an error naming %q", tc.name, err, tc.wantErr)
			continue
		}
		if err != nil && (!errors.Is(err, errInvalidArgument) || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: err = %v, want InvalidArgument naming %q", tc.name, err, tc.wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: appMount = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestResourcesRoundTrip(t *testing.T) {
	in := &runtimeapi.LinuxContainerResources{
		CpuPeriod: 100000, CpuQuota: 20000, CpuShares: 512, CpusetCpus: "0", MemoryLimitInBytes: 64 << 20,
		MemorySwapLimitInBytes: 128 << 20, OomScoreAdj: 100,
		HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 4 << 20}},
		Unified:        map[string]string{"memory.high": "1000000"},
	}
	oom := 100
	out := criResources(linuxResources(in), &oom)
	if !proto.Equal(in, out) {
		t.Fatalf("round trip:\n in %v\nout %v", in, out)
	}
	if linuxResources(nil) != nil {
		t.Fatal("linuxResources(nil) != nil")
	}
	if r := linuxResources(&runtimeapi.LinuxContainerResources{}); r.CPU != nil || r.Memory != nil {
		t.Fatalf("zero resources set limits: %+v", r)
	}
}

func TestContainerLogPath(t *testing.T) {
	tests := []struct {
		dir, path, want string
		wantErr         string // the field the error names
	}{
		{"/var/log/pods/p", "c/0.log", "/var/log/pods/p/c/0.log", ""},
		{"/var/log/pods/p", "c/../0.log", "/var/log/pods/p/0.log", ""},
		{"", "c/0.log", "", ""},
		{"/var/log/pods/p", "", "", ""},
		{"", "/abs/c.log", "", "log_path"},
		{"/var/log/pods/p", "/abs/c.log", "", "log_path"},
		{"/var/log/pods/p", "../../x", "", "log_path"},
		{"/var/log/pods/p", "c/../../x", "", "log_path"},
		{"/var/log/pods/p", "..", "", "log_path"},
		{"/var/log/pods/p", ".", "", "log_path"},
		{"logs", "c/0.log", "", "log_directory"},
	}
	for _, tc := range tests {
		got, err := containerLogPath(&runtimeapi.PodSandboxConfig{LogDirectory: tc.dir}, &runtimeapi.ContainerConfig{LogPath: tc.path})
		if got != tc.want || (err != nil) != (tc.wantErr != "") {
			t.Errorf("containerLogPath(%q, %q) = %q, %v; want %q, error naming %q", tc.dir, tc.path, got, err, tc.want, tc.wantErr)
			continue
		}
		if err != nil && (!errors.Is(err, errInvalidArgument) || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("containerLogPath(%q, %q): %v, want InvalidArgument naming %s", tc.dir, tc.path, err, tc.wantErr)
		}
	}
}

func TestPullAuth(t *testing.T) {
	a, err := pullAuth(&runtimeapi.AuthConfig{Auth: "dXNlcjpwYXNz"}) // user:pass
	if err != nil || a.Username != "user" || a.Password != "pass" {
		t.Fatalf("pullAuth(auth) = %+v, %v", a, err)
	}
	if a, err := pullAuth(&runtimeapi.AuthConfig{}); a != nil || err != nil {
		t.Fatalf("empty auth = %+v, %v", a, err)
	}
	if _, err := pullAuth(&runtimeapi.AuthConfig{Auth: "!!"}); !errors.Is(err, errInvalidArgument) {
		t.Fatalf("bad auth: %v", err)
	}
	if a, _ := pullAuth(&runtimeapi.AuthConfig{RegistryToken: "tok"}); a == nil || a.RegistryToken != "tok" {
		t.Fatalf("token auth = %+v", a)
	}
}

func TestImageUser(t *testing.T) {
	tests := []struct {
		user   string
		uid    int64
		hasUID bool
		name   string
	}{
		{"", 0, false, ""},
		{"1002", 1002, true, ""},
		{"www-data", 0, false, "www-data"},
		{"1003:1004", 1003, true, ""},
		{"www-data:1004", 0, false, "www-data"},
	}
	for _, tc := range tests {
		uid, name := imageUser(tc.user)
		if (uid != nil) != tc.hasUID || (uid != nil && *uid != tc.uid) || name != tc.name {
			t.Errorf("imageUser(%q) = %v, %q", tc.user, uid, name)
		}
	}
}

func TestMatchLabels(t *testing.T) {
	l := map[string]string{"a": "1", "b": "2"}
	if !matchLabels(l, nil) || !matchLabels(l, map[string]string{"a": "1"}) ||
		matchLabels(l, map[string]string{"a": "2"}) || matchLabels(l, map[string]string{"c": "1"}) {
		t.Fatal("matchLabels is wrong")
	}
}

func TestCheckUserns(t *testing.T) {
	one := []*runtimeapi.IDMapping{{ContainerId: 0, HostId: 1000, Length: 65536}}
	tests := []struct {
		name string
		u    *runtimeapi.UserNamespace
		want codes.Code
	}{
		{"none", nil, codes.OK},
		{"node", &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}, codes.OK},
		{"container", &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_CONTAINER}, codes.InvalidArgument},
		{"target", &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_TARGET}, codes.InvalidArgument},
		{"pod, two mappings", &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: append(one, one...), Gids: one}, codes.InvalidArgument},
		{"pod, no gid mapping", &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: one}, codes.InvalidArgument},
		{"pod, 0 unmapped", &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD,
			Uids: []*runtimeapi.IDMapping{{ContainerId: 1, HostId: 1000, Length: 10}}, Gids: one}, codes.InvalidArgument},
		{"pod, empty mapping", &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD,
			Uids: []*runtimeapi.IDMapping{{HostId: 1000}}, Gids: one}, codes.InvalidArgument},
		{"pod, mapping past 2^32", &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD,
			Uids: one, Gids: []*runtimeapi.IDMapping{{HostId: 1<<32 - 1, Length: 10}}}, codes.InvalidArgument},
		{"pod, valid", &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: one, Gids: one}, codes.OK},
	}
	for _, tc := range tests {
		if got := status.Code(toStatus(checkUserns(tc.u))); got != tc.want {
			t.Errorf("%s: checkUserns's code = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLiveResources(t *testing.T) {
	res := &runtimeapi.LinuxContainerResources{CpuShares: 2, CpusetCpus: "0", MemoryLimitInBytes: 1 << 20, CpuQuota: 5}
	liveResources(res, &cgstats.Stats{CPUShares: 512, CPUPeriodMicros: 100000, CPUQuotaMicros: -1,
		MemoryLimit: 9223372036854771712, MemorySwapLimit: 256 << 20})
	want := &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: 0, CpusetCpus: "0",
		MemoryLimitInBytes: 0, MemorySwapLimitInBytes: 256 << 20}
	if !proto.Equal(res, want) {
		t.Fatalf("liveResources = %v, want %v", res, want)
	}
}

// TestPrivilegedNeedsPrivilegedSandbox: a privileged container in a
// sandbox that is not privileged is refused, as containerd ("no privileged
// container allowed in sandbox") and CRI-O refuse it.
func TestPrivilegedNeedsPrivilegedSandbox(t *testing.T) {
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{Privileged: true}},
	}
	_, err := translateContainer(&runtimeapi.PodSandboxConfig{}, cfg)
	if status.Code(toStatus(err)) != codes.InvalidArgument {
		t.Errorf("privileged container in an unprivileged sandbox: %v, want InvalidArgument", err)
	}
	sb := &runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{Privileged: true}}}
	if plan, err := translateContainer(sb, cfg); err != nil || !plan.opts.Privileged {
		t.Errorf("privileged container in a privileged sandbox: %v, privileged %v", err, plan.opts.Privileged)
	}
}

// TestMaskedPathsDefaults: a security context without masked or read-only
// paths keeps the default lists (crictl's JSON; any client but the
// kubelet), unless the pod has a user namespace, where that is what the
// kubelet sends for procMount Unmasked; given lists are taken as they are.
func TestMaskedPathsDefaults(t *testing.T) {
	userns := &runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD,
			Uids: []*runtimeapi.IDMapping{{HostId: 100000, ContainerId: 0, Length: 65536}},
			Gids: []*runtimeapi.IDMapping{{HostId: 100000, ContainerId: 0, Length: 65536}}}}}}}
	for _, c := range []struct {
		name           string
		sb             *runtimeapi.PodSandboxConfig
		masked, ronly  []string
		defaults, none bool
	}{
		{name: "no lists", sb: &runtimeapi.PodSandboxConfig{}, defaults: true},
		{name: "no lists, user namespace", sb: userns, none: true},
		{name: "lists", sb: &runtimeapi.PodSandboxConfig{}, masked: []string{"/proc/kcore"}, ronly: []string{"/proc/sys"}},
	} {
		cfg := &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
			Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				RunAsUser: &runtimeapi.Int64Value{Value: 0}, MaskedPaths: c.masked, ReadonlyPaths: c.ronly}},
		}
		plan, err := translateContainer(c.sb, cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		m, r := plan.opts.MaskedPaths, plan.opts.ReadonlyPaths
		switch {
		case c.defaults && (m != nil || r != nil):
			t.Errorf("%s: masked %#v read-only %#v; want nil (stage0's defaults)", c.name, m, r)
		case c.none && (m == nil || r == nil || len(m)+len(r) != 0):
			t.Errorf("%s: masked %q read-only %q; want none at all", c.name, m, r)
		case !c.defaults && !c.none && (!reflect.DeepEqual(m, c.masked) || !reflect.DeepEqual(r, c.ronly)):
			t.Errorf("%s: masked %q read-only %q; want %q %q", c.name, m, r, c.masked, c.ronly)
		}
	}
}
