package networking

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOutboundNAT: a pod on the default network reaches a host outside its
// subnet (a namespace behind a veth that has no route back to the pod
// subnet) and that host sees the connection come from the host's address.
func TestOutboundNAT(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()

	h := sha256.Sum256([]byte(t.Name() + "/outside"))
	hostIf, outIf := fmt.Sprintf("rko%x", h[:4]), fmt.Sprintf("rki%x", h[:4])
	prefix := fmt.Sprintf("10.%d.%d", 100+int(h[4])%50, h[5])
	outside := filepath.Join(t.TempDir(), "outside-netns")
	if err := createNetNS(outside); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = removeNetNS(outside) })
	t.Cleanup(func() { deleteLink(hostIf) })
	for _, args := range [][]string{
		{"link", "add", hostIf, "type", "veth", "peer", "name", outIf},
		{"link", "set", outIf, "netns", outside},
		{"addr", "add", prefix + ".1/30", "dev", hostIf},
		{"link", "set", hostIf, "up"},
		{"--net=" + outside, "ip", "addr", "add", prefix + ".2/30", "dev", outIf},
		{"--net=" + outside, "ip", "link", "set", outIf, "up"},
	} {
		cmd := exec.Command("ip", args...)
		if strings.HasPrefix(args[0], "--net=") {
			cmd = exec.Command("nsenter", args...)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	// The outside server answers with the address it sees the client at.
	var ln net.Listener
	inNS(t, outside, func() error {
		var err error
		ln, err = net.Listen("tcp", prefix+".2:0")
		return err
	})
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			fmt.Fprintf(c, "%s\n", host)
			c.Close()
		}
	}()

	pn := newPod(t, cfg, "default")
	res, err := Setup(ctx, cfg, pn)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := DialInNetNS(dctx, res.NetNS, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("pod cannot reach %s: %v", ln.Addr(), err)
	}
	if got := readConn(t, c); got != prefix+".1" {
		t.Fatalf("outside host saw the pod as %q, want the host address %s.1", got, prefix)
	}
}

// TestMasqueradeAfterReboot: the outbound NAT rule of the default network
// is gone after a reboot (or a flush of the nat table) while the markers of
// the pods that used it stay on disk until those pods are torn down. A pod
// set up then still gets the rule, though other markers exist.
func TestMasqueradeAfterReboot(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()

	old := newPod(t, cfg, "default")
	if _, err := Setup(ctx, cfg, old); err != nil {
		t.Fatalf("Setup old pod: %v", err)
	}
	if !masqueradePresent(ctx, cfg.DefaultSubnet) {
		t.Fatal("no masquerade rule after the first pod's Setup")
	}
	// The reboot: the kernel's NAT rules and the namespace are gone, the
	// data dir (net-info.json, markers, reservations) is not.
	if err := removeMasquerade(ctx, cfg.DefaultSubnet); err != nil {
		t.Fatal(err)
	}
	if err := removeNetNS(filepath.Join(old.Dir, "netns")); err != nil {
		t.Fatal(err)
	}

	pn := newPod(t, cfg, "default")
	if _, err := Setup(ctx, cfg, pn); err != nil {
		t.Fatalf("Setup new pod: %v", err)
	}
	if !masqueradePresent(ctx, cfg.DefaultSubnet) {
		t.Error("a pod set up after the reboot has no outbound NAT rule (another pod's marker from before the reboot is on disk)")
	}
	// The old pod is removed (kubelet's StopPodSandbox, rkt gc): the new
	// pod is still running, and still without the rule.
	if err := Teardown(ctx, cfg, old.Dir); err != nil {
		t.Fatal(err)
	}
	if !masqueradePresent(ctx, cfg.DefaultSubnet) {
		t.Error("after the old pod's teardown the running pod still has no outbound NAT rule")
	}
}
