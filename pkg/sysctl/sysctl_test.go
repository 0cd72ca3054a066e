package sysctl

import "testing"

func TestCheck(t *testing.T) {
	tests := []struct {
		key, value string
		ok         bool
	}{
		{"net.ipv4.ip_unprivileged_port_start", "0", true},
		{"net.ipv4.conf.eth0-1.forwarding", "1", true},
		{"kernel.shm_rmid_forced", "1", true},
		{"fs.mqueue.msg_max", "10", true},
		{"kernel.hostname", "x", true},
		{"kernel.core_pattern", "|/x", false},
		{"vm.swappiness", "1", false},
		{"net..x", "1", false},
		{"net.x.", "1", false},
		{"net.ipv4/../../kernel/core_pattern", "1", false},
		{"net/ipv4/ip_forward", "1", false},
		{"net.ipv4.ip_forward", "1\nx", false},
		{"", "1", false},
	}
	for _, tc := range tests {
		if err := Check(tc.key, tc.value); (err == nil) != tc.ok {
			t.Errorf("Check(%q, %q) = %v, want ok=%v", tc.key, tc.value, err, tc.ok)
		}
	}
}

func TestNamespace(t *testing.T) {
	for k, want := range map[string]string{
		"net.core.somaxconn": "net", "kernel.sem": "ipc", "fs.mqueue.queues_max": "ipc",
		"kernel.domainname": "uts", "kernel.pid_max": "", "network": "",
	} {
		if got := Namespace(k); got != want {
			t.Errorf("Namespace(%q) = %q, want %q", k, got, want)
		}
	}
	if got := Path("net.ipv4.ip_forward"); got != "/proc/sys/net/ipv4/ip_forward" {
		t.Errorf("Path = %q", got)
	}
}
