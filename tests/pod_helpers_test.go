package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rkt/rkt/tests/testutil"
)

// podEnv is a test environment with busybox in a registry and a private
// default network (its own bridge and subnet, removed at cleanup).
type podEnv struct {
	*testutil.Env
	image  string // busybox reference in the registry
	bridge string
	subnet string
}

var podNetSeq atomic.Int32

// newPodEnv sets up an environment for pod tests.
func newPodEnv(t testing.TB) *podEnv {
	t.Helper()
	n := podNetSeq.Add(1)
	bridge := fmt.Sprintf("rkts0t%d%d", time.Now().UnixNano()%1000, n)
	// Registered before the environment, so it runs after the environment's
	// leak check (rkt gc): no pod's veth may be left on the bridge.
	t.Cleanup(func() {
		if out, _ := exec.Command("ip", "-o", "link", "show", "master", bridge).Output(); len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("leak check: interfaces left on the default network's bridge %s:\n%s", bridge, out)
		}
		exec.Command("ip", "link", "del", bridge).Run()
	})
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	ref := reg.Push(t, "busybox:1", testutil.Busybox(t))
	pe := &podEnv{
		Env:    env,
		image:  ref,
		bridge: bridge,
		subnet: fmt.Sprintf("10.%d.%d.0/24", 200+int(n%50), time.Now().UnixNano()%250),
	}
	env.RunOK("fetch", "--no-progress", "--insecure-options=http", ref)
	return pe
}

// netArgs are the hidden flags pointing the default network at the test's
// bridge and subnet.
func (pe *podEnv) netArgs() []string {
	return []string{"--default-bridge=" + pe.bridge, "--default-subnet=" + pe.subnet}
}

// run runs `rkt run` with the test's network flags.
func (pe *podEnv) run(args ...string) testutil.Result {
	pe.T.Helper()
	return pe.Run(append(append([]string{"run"}, pe.netArgs()...), args...)...)
}

// runDetached starts a pod with --detach and returns its UUID.
func (pe *podEnv) runDetached(args ...string) string {
	pe.T.Helper()
	r := pe.run(append([]string{"--detach"}, args...)...)
	if r.Code != 0 {
		pe.T.Fatalf("rkt run --detach failed: %s", r)
	}
	uuid := strings.TrimSpace(r.Stdout)
	pe.TrackPod(uuid)
	return uuid
}

// waitUUIDFile waits until rkt wrote the pod's UUID to path
// (--uuid-file-save) and tracks the pod; on timeout it calls abort (to
// kill what the test started) and fails the test.
func (pe *podEnv) waitUUIDFile(path string, abort func()) string {
	pe.T.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(path); len(strings.TrimSpace(string(b))) > 0 {
			uuid := strings.TrimSpace(string(b))
			pe.TrackPod(uuid)
			return uuid
		}
		if time.Now().After(deadline) {
			abort()
			pe.T.Fatalf("rkt did not save the pod UUID to %s", path)
		}
	}
}

// podJSON is the subset of `rkt status --format=json` the tests read.
type podJSON struct {
	UUID     string `json:"uuid"`
	State    string `json:"state"`
	ExitCode int    `json:"exitCode"`
	Pid      int    `json:"pid"`
	Apps     []struct {
		Name      string `json:"name"`
		State     string `json:"state"`
		ExitCode  int    `json:"exitCode"`
		Signal    string `json:"signal"`
		OOMKilled bool   `json:"oomKilled"`
		Reason    string `json:"reason"`
		Pid       int    `json:"pid"`
	} `json:"apps"`
	Networks []struct {
		Name string   `json:"name"`
		IPs  []string `json:"ips"`
	} `json:"networks"`
}

// status returns the pod's status.
func (pe *podEnv) status(uuid string, extra ...string) podJSON {
	pe.T.Helper()
	r := pe.RunOK(append([]string{"status", "--format=json"}, append(extra, uuid)...)...)
	var p podJSON
	if err := json.Unmarshal([]byte(r.Stdout), &p); err != nil {
		pe.T.Fatalf("cannot parse status: %v\n%s", err, r.Stdout)
	}
	return p
}

// waitState polls until the pod reaches state or the timeout expires.
func (pe *podEnv) waitState(uuid, state string, timeout time.Duration) podJSON {
	pe.T.Helper()
	deadline := time.Now().Add(timeout)
	for {
		p := pe.status(uuid)
		if p.State == state {
			return p
		}
		if time.Now().After(deadline) {
			pe.T.Fatalf("pod %s is %s after %s, want %s", uuid, p.State, timeout, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// podIP returns the pod's first IPv4 address.
func (p podJSON) podIP() string {
	for _, n := range p.Networks {
		for _, ip := range n.IPs {
			addr, _, _ := strings.Cut(ip, "/")
			if !strings.Contains(addr, ":") {
				return addr
			}
		}
	}
	return ""
}

// readFile returns a file's content without surrounding space.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
