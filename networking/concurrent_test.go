package networking

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentPods sets up and tears down pods on the default network at
// the same time (as the CRI server does): the bridge is created once, every
// pod gets its own address, the masquerade rule is added once, and nothing
// is left.
func TestConcurrentPods(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()
	const n = 6
	pods := make([]PodNet, n)
	for i := range pods {
		pods[i] = newPod(t, cfg, "default")
	}
	results := make([]*Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range pods {
		wg.Go(func() { results[i], errs[i] = Setup(ctx, cfg, pods[i]) })
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Setup of pod %d: %v", i, err)
		}
		ip := results[i].PodIPs()[0]
		if seen[ip] {
			t.Fatalf("address %s given twice", ip)
		}
		seen[ip] = true
	}
	out, err := exec.Command("iptables-save", "-t", "nat").Output()
	if err != nil {
		t.Fatal(err)
	}
	if c := strings.Count(string(out), "rkt default network "+cfg.DefaultSubnet+"\""); c != 1 {
		t.Fatalf("%d masquerade rules for %s, want 1", c, cfg.DefaultSubnet)
	}
	for i := range pods {
		wg.Go(func() { errs[i] = Teardown(ctx, cfg, pods[i].Dir) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Teardown of pod %d: %v", i, err)
		}
		if left := hostLeftovers(t, cfg, pods[i], cfg.DefaultBridge); len(left) > 0 {
			t.Fatalf("pod %d after Teardown: %v", i, left)
		}
	}
	if masqueradePresent(ctx, cfg.DefaultSubnet) {
		t.Fatalf("masquerade rule of %s outlives the last pod", cfg.DefaultSubnet)
	}
}
