package testutil

import (
	"os/exec"
	"strings"
	"testing"
)

// RemovePodNAT deletes the nat rules CNI plugins tagged with the pod's
// container ID and the per-pod chains they jump to, as a flush of the nat
// table by someone else would (without touching other pods). With
// onlyMasq, only the POSTROUTING (ipMasq) rules and their chains go.
func RemovePodNAT(t testing.TB, uuid string, onlyMasq bool) {
	t.Helper()
	chains := map[string]bool{}
	for _, l := range natRules(t, uuid) {
		args := strings.Fields(l)
		if onlyMasq && args[1] != "POSTROUTING" {
			continue
		}
		if c := args[len(args)-1]; args[len(args)-2] == "-j" && strings.HasPrefix(c, "CNI-") && !strings.HasPrefix(c, "CNI-HOSTPORT") {
			chains[c] = true
		}
		// iptables-save quotes the comment as a shell would
		if out, err := exec.Command("sh", "-c", "iptables -w -t nat -D "+strings.TrimPrefix(l, "-A ")).CombinedOutput(); err != nil {
			t.Fatalf("iptables -D %s: %v: %s", l, err, out)
		}
	}
	if len(chains) == 0 {
		t.Fatalf("pod %s has no NAT chain", uuid)
	}
	for ch := range chains {
		for _, op := range []string{"-F", "-X"} {
			if out, err := exec.Command("iptables", "-w", "-t", "nat", op, ch).CombinedOutput(); err != nil {
				t.Fatalf("iptables %s %s: %v: %s", op, ch, err, out)
			}
		}
	}
}

// natRules lists the nat table's rules that name the pod (iptables-save).
func natRules(t testing.TB, uuid string) []string {
	t.Helper()
	out, err := exec.Command("iptables-save", "-t", "nat").Output()
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "-A ") && strings.Contains(l, uuid) {
			rules = append(rules, l)
		}
	}
	return rules
}
