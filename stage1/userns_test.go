package main

import (
	"strings"
	"syscall"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/schema"
)

func TestAdjustSpecUserNS(t *testing.T) {
	spec := &specs.Spec{
		Process: &specs.Process{Args: []string{"sh"}},
		Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{
			{Type: specs.MountNamespace}, {Type: specs.UserNamespace},
		}},
	}
	ns := podNamespaces{user: "/pod/userns"}
	if err := adjustSpec(spec, ns, limits{}); err != nil {
		t.Fatal(err)
	}
	if n := spec.Linux.Namespaces[1]; n.Type != specs.UserNamespace || n.Path != "/pod/userns" {
		t.Errorf("user namespace entry %+v, want the pod's /pod/userns", n)
	}
}

func TestUserNSPath(t *testing.T) {
	dir := t.TempDir()
	if p, err := userNSPath(dir, &schema.PodManifest{}); p != "" || err != nil {
		t.Errorf("a pod without mappings: %q, %v; want none", p, err)
	}
	m := &schema.PodManifest{UUID: "u", UserNS: &schema.UserNamespace{}}
	if _, err := userNSPath(dir, m); err == nil {
		t.Error("a pod with mappings but no mounted userns was accepted")
	}
}

func TestHolderArgs(t *testing.T) {
	m := &schema.PodManifest{Hostname: "h", Sysctls: map[string]string{
		"kernel.shmmax": "1", "net.ipv4.ip_forward": "1", "kernel.domainname": "d",
	}}
	all := uintptr(syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS)
	tests := []struct {
		flags uintptr
		want  string
	}{
		{all, "--hostname=h --sysctl=kernel.domainname=d --sysctl=kernel.shmmax=1"},
		{syscall.CLONE_NEWIPC, "--sysctl=kernel.shmmax=1"},
		{0, ""},
	}
	for _, tc := range tests {
		if got := strings.Join(holderArgs(m, tc.flags), " "); got != tc.want {
			t.Errorf("holderArgs(flags %#x) = %q, want %q", tc.flags, got, tc.want)
		}
	}
}
