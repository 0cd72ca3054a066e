package main

import (
	"os"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/pkg/sysctl"
)

func TestParseSignal(t *testing.T) {
	tests := map[string]unix.Signal{"": unix.SIGTERM, "SIGQUIT": unix.SIGQUIT, "quit": unix.SIGQUIT, "9": unix.SIGKILL, "SIGRTMIN+1": 0}
	for in, want := range tests {
		got, err := parseSignal(in)
		if want == 0 {
			if err == nil && got == 0 {
				t.Errorf("%q: no error", in)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	if _, err := parseSignal("SIGNOPE"); err == nil {
		t.Error("unknown signal accepted")
	}
}

func TestSystemdCgroupsPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/rkt/0123/web", "system.slice:rkt-0123:web"},
		{"/kubepods.slice/0123/web", "kubepods.slice:rkt-0123:web"},
		{"machine.slice:rkt:x", "machine.slice:rkt:x"},
	}
	for _, tc := range tests {
		if got := systemdCgroupsPath(tc.in); got != tc.want {
			t.Errorf("systemdCgroupsPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSystemdDetection(t *testing.T) {
	fi, err := os.Lstat("/run/systemd/system")
	if booted := err == nil && fi.IsDir(); systemdRunning() != booted {
		t.Errorf("systemdRunning() = %v, /run/systemd/system says %v", systemdRunning(), booted)
	}
}

func TestStage1Scope(t *testing.T) {
	if got := stage1ScopeName("abc"); got != "rkt-stage1-abc.scope" {
		t.Errorf("scope name %q", got)
	}
	if got := stage1Slice("/kubepods.slice"); got != "kubepods.slice" {
		t.Errorf("slice of a slice parent: %q", got)
	}
	if got := stage1Slice("/rkt"); got != "system.slice" {
		t.Errorf("slice of a cgroupfs parent: %q", got)
	}
}

func TestPodCgroupPath(t *testing.T) {
	tests := []struct {
		parent, want string
	}{
		{"", "/rkt/u1"},
		{"/kube/pods", "/kube/pods/u1"},
		{"relative", "/relative/u1"},
	}
	for _, tc := range tests {
		m := &schema.PodManifest{UUID: "u1", CgroupParent: tc.parent}
		if got := podCgroupPath(m); got != tc.want {
			t.Errorf("parent %q: got %q, want %q", tc.parent, got, tc.want)
		}
	}
}

func TestClamp(t *testing.T) {
	l := limits{sysResource: false, oomScoreAdj: 0}
	if got := l.clampOOMScoreAdj(-999); got != 0 {
		t.Errorf("oom -999 clamped to %d, want 0", got)
	}
	if got := l.clampOOMScoreAdj(500); got != 500 {
		t.Errorf("oom 500 changed to %d", got)
	}
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &cur); err != nil {
		t.Fatal(err)
	}
	r := specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Hard: cur.Max + 1000, Soft: cur.Max + 500}
	l.clampRlimit(&r)
	if r.Hard != cur.Max || r.Soft != cur.Max {
		t.Errorf("rlimit clamped to %d/%d, want %d/%d", r.Soft, r.Hard, cur.Max, cur.Max)
	}
	priv := limits{sysResource: true}
	if got := priv.clampOOMScoreAdj(-999); got != -999 {
		t.Errorf("with CAP_SYS_RESOURCE oom changed to %d", got)
	}
}

func TestSysctlNamespace(t *testing.T) {
	tests := map[string]string{
		"net.ipv4.ip_forward": "net", "kernel.shmmax": "ipc", "fs.mqueue.msg_max": "ipc",
		"kernel.hostname": "uts", "kernel.panic": "", "vm.swappiness": "",
	}
	for k, want := range tests {
		if got := sysctl.Namespace(k); got != want {
			t.Errorf("%s: got %q, want %q", k, got, want)
		}
	}
	if err := applySysctls(map[string]string{"vm.swappiness": "1"}, ""); err == nil {
		t.Error("a non-namespaced sysctl was accepted")
	}
	if err := applySysctls(map[string]string{"net.ipv4.ip_forward": "1"}, ""); err == nil {
		t.Error("a net sysctl without a pod netns was accepted")
	}
}

func TestAdjustSpec(t *testing.T) {
	spec := &specs.Spec{
		Hostname: "x",
		Process:  &specs.Process{Args: []string{"sh"}},
		Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{
			{Type: specs.NetworkNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace},
			{Type: specs.PIDNamespace}, {Type: specs.MountNamespace},
		}},
	}
	ns := podNamespaces{ipc: "/proc/1/ns/ipc", uts: "/proc/1/ns/uts", pid: "/proc/2/ns/pid"}
	if err := adjustSpec(spec, ns, limits{}); err != nil {
		t.Fatal(err)
	}
	got := map[specs.LinuxNamespaceType]string{}
	for _, n := range spec.Linux.Namespaces {
		got[n.Type] = n.Path
	}
	if _, ok := got[specs.NetworkNamespace]; ok {
		t.Error("host networking kept a network namespace")
	}
	if got[specs.IPCNamespace] != ns.ipc || got[specs.UTSNamespace] != ns.uts || got[specs.PIDNamespace] != ns.pid {
		t.Errorf("namespaces: %v", got)
	}
	if p, ok := got[specs.MountNamespace]; !ok || p != "" {
		t.Errorf("mount namespace: %q %v", p, ok)
	}
	if spec.Hostname != "" {
		t.Error("hostname kept in the pod's UTS namespace")
	}
}
