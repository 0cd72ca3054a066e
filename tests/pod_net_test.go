package tests

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/tests/testutil"
)

// httpdArgs runs busybox httpd serving body on port.
func httpdArgs(port int, body string) []string {
	return []string{"--exec=/bin/sh", "--", "-c",
		fmt.Sprintf("mkdir -p /www && echo %s > /www/index.html && exec httpd -f -p %d -h /www", body, port)}
}

// TestPodTwoPodsTalk: two pods on the default network reach each other.
func TestPodTwoPodsTalk(t *testing.T) {
	pe := newPodEnv(t)
	server := pe.runDetached(append([]string{pe.image}, httpdArgs(8080, "hello-from-server")...)...)
	sp := pe.waitState(server, "running", 10*time.Second)
	ip := sp.podIP()
	if ip == "" {
		t.Fatalf("server pod has no IP: %+v", sp)
	}
	var r = pe.run(pe.image, "--exec=/bin/sh", "--", "-c",
		fmt.Sprintf("for i in 1 2 3 4 5 6 7 8 9 10; do wget -q -O- http://%s:8080/ && exit 0; sleep 0.2; done; exit 1", ip))
	if r.Code != 0 || !strings.Contains(r.Stdout, "hello-from-server") {
		t.Fatalf("client pod could not reach %s:8080: %s", ip, r)
	}
	pe.RunOK("stop", "--timeout=1s", server)
}

// TestPodPublishedPort: --port publishes an app port on the host, in
// docker's order (HOSTPORT:CONTAINERPORT, with a host IP and a protocol)
// and in rkt 1.x's (NAME:HOSTPORT, NAME a port the image exposes, 80-tcp);
// the reverse order and names the image does not expose are refused with
// the grammar, before any pod is made.
func TestPodPublishedPort(t *testing.T) {
	pe := newPodEnv(t)
	archive := filepath.Join(t.TempDir(), "exposing.tar")
	testutil.WriteOCIArchive(t, archive, testutil.BusyboxWith(t, testutil.ImageConfig{ExposedPorts: []string{"80/tcp"}}), "exposing:1")
	exposing := pe.Fetch("oci-archive:" + archive)

	for _, c := range []struct{ port, want string }{
		{"80/tcp:8080", "come last"},    // this rkt's old container-first order
		{"8080", "no host port"},        // docker's random host port
		{"8080:80/xyz", "protocol"},     // bad protocol
		{"443-tcp:8443", "80-tcp"},      // not exposed: the error lists what is
		{"::1:8080:80", "brackets"},     // IPv6 host without brackets
		{"8000-8010:80", "port ranges"}, // ranges
	} {
		r := pe.run("--port="+c.port, exposing, "--exec=/bin/true")
		if r.Code != 254 || !strings.Contains(r.Stderr, c.want) || !strings.Contains(r.Stderr, "HOSTPORT") {
			t.Errorf("--port=%s: want exit 254 naming %q and the grammar: %s", c.port, c.want, r)
		}
	}
	var pods []any
	if r := pe.RunOK("list", "--format=json"); json.Unmarshal([]byte(r.Stdout), &pods) != nil || len(pods) != 0 {
		t.Errorf("refused --port values left pods: %s", r)
	}

	docker, dockerIP, named := freePort(t), freePort(t), freePort(t)
	uuid := pe.runDetached(append([]string{
		fmt.Sprintf("--port=%d:80", docker),
		fmt.Sprintf("--port=127.0.0.1:%d:80/tcp", dockerIP),
		fmt.Sprintf("--port=80-tcp:127.0.0.1:%d", named),
		exposing}, httpdArgs(80, "published")...)...)
	pe.waitState(uuid, "running", 10*time.Second)
	for _, hp := range []int{docker, dockerIP, named} {
		if body := httpGet(t, "127.0.0.1", hp); !strings.Contains(body, "published") {
			t.Errorf("host port %d answered %q", hp, body)
		}
	}
	man := pe.RunOK("cat-manifest", uuid)
	var pod schema.PodManifest
	if err := json.Unmarshal([]byte(man.Stdout), &pod); err != nil {
		t.Fatalf("pod manifest: %v\n%s", err, man.Stdout)
	}
	want := fmt.Sprintf("[{tcp 80 %d } {tcp 80 %d 127.0.0.1} {tcp 80 %d 127.0.0.1}]", docker, dockerIP, named)
	if got := fmt.Sprint(pod.Ports); got != want {
		t.Errorf("pod ports %s, want %s", got, want)
	}
	pe.RunOK("stop", "--timeout=1s", uuid)
}

// TestPodNetNoneAndHost: --net=none has only loopback; --net=host shares
// the host's network namespace.
func TestPodNetNoneAndHost(t *testing.T) {
	pe := newPodEnv(t)
	r := pe.run("--net=none", pe.image, "--exec=/bin/sh", "--", "-c", "ls /sys/class/net")
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != "lo" {
		t.Errorf("--net=none interfaces: %s", r)
	}
	// the host's network namespace itself (interfaces come and go as other
	// tests run, the namespace does not)
	hostNS, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	r = pe.run("--net=host", pe.image, "--exec=/bin/sh", "--", "-c", "readlink /proc/self/ns/net")
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != hostNS {
		t.Errorf("--net=host: want network namespace %s: %s", hostNS, r)
	}
}

// freePort returns a TCP port free on all addresses right now, below the
// kernel's ephemeral range (ip_local_port_range). A pod's host port is a
// DNAT rule in the host's nat OUTPUT chain for every local address, held
// by no socket: while the pod runs (or forever, if its teardown is lost),
// connections to 127.0.0.1 on that port go to the pod. A port from the
// ephemeral range (net.Listen(":0")) is one the kernel hands to any other
// listener on 127.0.0.1:0 once freed, such as another package's test
// server (store's registries): that server becomes unreachable and its
// test waits for a 30 s dial timeout.
func freePort(t testing.TB) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	low := ephemeralLow(t)
	base := max(1024, low-16384)
	for tries := 0; tries < 1000; tries++ {
		port := base + rand.IntN(low-base)
		if handedOut.ports[port] {
			continue
		}
		// all addresses: the kubelet listens on 0.0.0.0
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
		if err != nil {
			continue // in use
		}
		l.Close()
		handedOut.ports[port] = true
		return port
	}
	t.Fatalf("no free TCP port in [%d, %d)", base, low)
	return 0
}

// ephemeralLow returns the first port of the kernel's ephemeral range.
func ephemeralLow(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		t.Fatalf("unexpected ip_local_port_range %q", b)
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low <= 2048 {
		t.Fatalf("unexpected ip_local_port_range %q", b)
	}
	return low
}

// handedOut holds the ports freePort gave in this test process.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// TestPodNamedNetwork: --net=NAME attaches the pod to a network defined
// by a CNI config file in <local config>/net.d.
func TestPodNamedNetwork(t *testing.T) {
	pe := newPodEnv(t)
	n := time.Now().UnixNano()
	bridge := fmt.Sprintf("rktn%d", n%100000)
	subnet := fmt.Sprintf("10.252.%d.0/24", n%250)
	t.Cleanup(func() { exec.Command("ip", "link", "del", bridge).Run() })
	confDir := filepath.Join(pe.LocalConfig, "net.d")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"testnet","plugins":[{"type":"bridge","bridge":%q,"isGateway":true,"ipam":{"type":"host-local","subnet":%q}}]}`, bridge, subnet)
	if err := os.WriteFile(filepath.Join(confDir, "10-testnet.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	uuid := pe.runDetached("--net=testnet", pe.image, "--exec=/bin/sleep", "--", "600")
	p := pe.waitState(uuid, "running", 10*time.Second)
	_, ipnet, _ := net.ParseCIDR(subnet)
	if len(p.Networks) != 1 || p.Networks[0].Name != "testnet" || !ipnet.Contains(net.ParseIP(p.podIP())) {
		t.Fatalf("pod networks %+v, want one address in testnet %s", p.Networks, subnet)
	}
	r := pe.RunOK("enter", "--tty=false", uuid, "/bin/sh", "-c", "ip -4 addr show eth0")
	if !strings.Contains(r.Stdout, p.podIP()+"/24") {
		t.Errorf("eth0 in the pod lacks %s: %s", p.podIP(), r)
	}
	pe.RunOK("stop", "--timeout=1s", uuid)
}
