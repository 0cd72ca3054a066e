package tests

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rkt/rkt/tests/testutil"
)

// criService is a `rkt kubelet-service` process started by a test.
type criService struct {
	t          testing.TB
	env        *testutil.Env
	Socket     string // unix socket path
	Endpoint   string // unix://<Socket>
	CNIConfDir string
	LogPath    string
	extraArgs  []string
	mountNS    mountNS
	rktBin     string // "": testutil.RKTBin
	stage1Bin  string // "": testutil.Stage1Bin
	cmd        *exec.Cmd
	done       chan struct{}
}

// requireRoot skips tests that need root (pods, networks, cgroups).
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

// startCRIService writes a CNI network for CRI pods, starts
// `rkt kubelet-service` on a private socket and waits until it answers.
// It is stopped (SIGTERM) at cleanup, before the environment's leak check.
func startCRIService(t testing.TB, env *testutil.Env, extraArgs ...string) *criService {
	t.Helper()
	return startCRIServiceOf(t, env, "", "", extraArgs...)
}

// startCRIServiceOf is startCRIService with the rkt and stage1 binaries
// given ("": the tests').
func startCRIServiceOf(t testing.TB, env *testutil.Env, rktBin, stage1Bin string, extraArgs ...string) *criService {
	t.Helper()
	return launchCRIService(t, env, hostMountNS, rktBin, stage1Bin, extraArgs...)
}

// startCRIServiceUnified is startCRIService in a mount namespace where
// /sys/fs/cgroup is the cgroup2 hierarchy, as on a pure cgroup v2 host.
func startCRIServiceUnified(t testing.TB, env *testutil.Env, extraArgs ...string) *criService {
	t.Helper()
	return launchCRIService(t, env, unifiedMountNS, "", "", extraArgs...)
}

// startCRIServicePrivateMounts is startCRIService in a new mount namespace
// at each start (unshare --mount: private propagation), as a systemd unit
// with private mounts: a restarted service is not in its pods' one.
func startCRIServicePrivateMounts(t testing.TB, env *testutil.Env, extraArgs ...string) *criService {
	t.Helper()
	return launchCRIService(t, env, privateMountNS, "", "", extraArgs...)
}

// mountNS is the mount namespace a test's service runs in.
type mountNS int

const (
	hostMountNS    mountNS = iota // the test's
	privateMountNS                // a new one at each start
	unifiedMountNS                // privateMountNS with cgroup2 on /sys/fs/cgroup
)

func launchCRIService(t testing.TB, env *testutil.Env, mns mountNS, rktBin, stage1Bin string, extraArgs ...string) *criService {
	t.Helper()
	s := &criService{
		mountNS:    mns,
		rktBin:     rktBin,
		stage1Bin:  stage1Bin,
		t:          t,
		env:        env,
		Socket:     filepath.Join(env.Root, "cri.sock"),
		CNIConfDir: filepath.Join(env.Root, "net.d"),
		LogPath:    filepath.Join(env.Root, "kubelet-service.log"),
		extraArgs:  extraArgs,
	}
	s.Endpoint = "unix://" + s.Socket
	writeCRINetwork(t, s.CNIConfDir)
	t.Cleanup(func() { removeCgroupParent(s.cgroupParent()) })
	s.start()
	t.Cleanup(s.stop)
	return s
}

// cgroupParent is the cgroup the test's pods are created under.
func (s *criService) cgroupParent() string { return "/rkt-test-" + filepath.Base(s.env.Root) }

// removeCgroupParent removes the (empty) cgroup parent of a test's pods in
// every hierarchy.
func removeCgroupParent(parent string) {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*" + parent)
	dirs = append(dirs, "/sys/fs/cgroup"+parent)
	for _, d := range dirs {
		os.Remove(d)
	}
}

func (s *criService) start() {
	t := s.t
	t.Helper()
	stage1 := s.stage1Bin
	if stage1 == "" {
		stage1 = testutil.Stage1Bin(t)
	}
	args := append([]string{"kubelet-service",
		"--socket=" + s.Socket,
		"--socket-group=root",
		"--stage1-path=" + stage1,
		"--cni-conf-dir=" + s.CNIConfDir,
		"--cgroup-parent=" + s.cgroupParent(),
		"--log-level=debug",
	}, s.extraArgs...)
	cmd := s.env.Command(context.Background(), args...)
	if s.rktBin != "" {
		cmd.Path, cmd.Args[0] = s.rktBin, s.rktBin
	}
	if s.mountNS != hostMountNS {
		// unshare(1) makes the new namespace's mounts private and execs
		// the shell, which execs rkt: cmd's pid stays the service's
		script := `exec "$0" "$@"`
		if s.mountNS == unifiedMountNS {
			script = `mount -t cgroup2 cgroup2 /sys/fs/cgroup && ` + script
		}
		cmd.Args = append([]string{"unshare", "--mount", "--", "sh", "-c", script, cmd.Path}, cmd.Args[1:]...)
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			t.Fatal(err)
		}
		cmd.Path = unshare
	}
	logf, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("cannot start rkt kubelet-service: %v", err)
	}
	logf.Close()
	s.cmd = cmd
	s.done = make(chan struct{})
	go func() { cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("unix", s.Socket); err == nil {
			c.Close()
			return
		}
		select {
		case <-s.done:
			out, _ := exec.Command("ss", "-xlp").CombinedOutput()
			t.Fatalf("rkt kubelet-service exited at start:\n%s\nDIAG:\n%s", s.Log(), out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("rkt kubelet-service did not listen on %s within 30s:\n%s", s.Socket, s.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Log returns what the service printed so far.
func (s *criService) Log() string {
	b, _ := os.ReadFile(s.LogPath)
	return string(b)
}

// stop sends SIGTERM and waits for the service to exit.
func (s *criService) stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.t.Errorf("rkt kubelet-service did not exit within 30s of SIGTERM")
		s.cmd.Process.Kill()
		<-s.done
	}
	if s.t.Failed() {
		s.t.Logf("kubelet-service log (%s):\n%s", s.LogPath, tail(s.Log(), 200))
	}
	s.cmd = nil
}

// Kill SIGKILLs the service (pods must survive it).
func (s *criService) Kill() {
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Restart starts the service again after Kill or stop.
func (s *criService) Restart() { s.start() }

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

// writeCRINetwork writes the CNI network CRI pods join: a bridge unique to
// the test with host-local IPAM, outbound NAT and portmap (with SNAT, so
// host ports answer on 127.0.0.1). The bridge is deleted and the sysctls the
// plugins change are restored at cleanup.
func writeCRINetwork(t testing.TB, dir string) {
	t.Helper()
	var rnd [2]byte
	rand.Read(rnd[:])
	n := binary.BigEndian.Uint16(rnd[:])
	bridge := fmt.Sprintf("rktcri%04x", n)
	// a /22: room for BenchmarkCRIScale's 500 pods
	subnet := fmt.Sprintf("10.%d.%d.0/22", 200+int(n>>8)%50, n&0xfc)
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "rkt-cri-test",
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": bridge, "isGateway": true, "ipMasq": true, "hairpinMode": true,
				"ipam": map[string]any{"type": "host-local", "ranges": [][]map[string]string{{{"subnet": subnet}}},
					"routes": []map[string]string{{"dst": "0.0.0.0/0"}}},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}, "snat": true},
		},
	}
	b, _ := json.MarshalIndent(conf, "", "  ")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "10-rkt-cri-test.conflist"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	restore := saveSysctls(t, "net/ipv4/ip_forward")
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", bridge).Run()
		restore()
	})
}

// bridge is the host bridge of the service's pod network.
func (s *criService) bridge(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.CNIConfDir, "10-rkt-cri-test.conflist"))
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Plugins []struct {
			Bridge string `json:"bridge"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(b, &conf); err != nil || len(conf.Plugins) == 0 || conf.Plugins[0].Bridge == "" {
		t.Fatalf("no bridge in the pod network config: %v", err)
	}
	return conf.Plugins[0].Bridge
}

// saveSysctls returns a function that restores the given /proc/sys values.
func saveSysctls(t testing.TB, keys ...string) func() {
	saved := map[string][]byte{}
	for _, k := range keys {
		if b, err := os.ReadFile("/proc/sys/" + k); err == nil {
			saved[k] = b
		}
	}
	return func() {
		for k, v := range saved {
			os.WriteFile("/proc/sys/"+k, v, 0o644)
		}
	}
}

// toolPath returns a test tool (crictl, critest, kubelet, criu,
// checkpointctl) from $RKT_TOOLS, or builds
// it into <module>/build/tools as `make tools` would.
func toolPath(t testing.TB, name string) string {
	t.Helper()
	if d := testutil.ToolsDir(); d != "" {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "build", "tools")
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	var cmd *exec.Cmd
	switch name {
	case "crictl":
		cmd = exec.Command("go", "install", "sigs.k8s.io/cri-tools/cmd/crictl@"+criToolsVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+dir)
	case "critest":
		cmd = exec.Command("./build-critest.sh", criToolsVersion, dir)
	case "kubelet":
		cmd = exec.Command("./e2e-node/build-k8s.sh", dir, "kubelet")
	case "criu":
		cmd = exec.Command("./build-criu.sh", dir)
	case "checkpointctl":
		cmd = exec.Command("go", "install", "github.com/checkpoint-restore/checkpointctl@"+checkpointctlVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+dir)
	default:
		t.Fatalf("unknown tool %q", name)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cannot build %s (set $RKT_TOOLS or run `make tools`): %v\n%s", name, err, out)
	}
	return p
}

// criToolsVersion is the cri-tools release whose crictl and critest the
// tests use.
const criToolsVersion = "v1.37.0"

// checkpointctlVersion is the Makefile's CHECKPOINTCTL_VERSION.
const checkpointctlVersion = "v1.6.0"
