package tests

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRISharedPIDInitConfined: in a pod whose containers share a PID
// namespace, its init (`stage1 pidns`) is every container's /proc/1. A
// container with CAP_SYS_PTRACE (kubectl debug's general profile) may
// open /proc/1/root: it must find an empty root there, not the host's,
// and /proc/1/net must be the pod's network, not the host's.
func TestCRISharedPIDInitConfined(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	t.Cleanup(func() { removeAllPods(t, dialCRI(t, svc)) })
	secret := filepath.Join(t.TempDir(), "secret")
	must(t, "write the host's secret", os.WriteFile(secret, []byte("host secret\n"), 0o600))

	pc := podConfig("pidns-init", podLogDir(t, c)) // no namespace options: the pod's PID namespace
	debugger := func(cfg *runtimeapi.ContainerConfig) {
		cfg.Command = []string{"sleep", "100000"}
		cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
			Capabilities: &runtimeapi.Capability{AddCapabilities: []string{"SYS_PTRACE"}}}
	}
	_, ids := runCounters(t, c, imgID, pc, debugger, "debugger")
	sh := func(script string) (string, int32) {
		t.Helper()
		r, err := c.ExecSync(rpcCtx(t), &runtimeapi.ExecSyncRequest{ContainerId: ids[0], Cmd: []string{"sh", "-c", script}, Timeout: 30})
		must(t, "ExecSync "+script, err)
		return string(r.Stdout) + string(r.Stderr), r.ExitCode
	}
	if out, _ := sh("tr '\\0' ' ' < /proc/1/cmdline"); !strings.Contains(out, "pidns") {
		t.Fatalf("/proc/1 is not the pod's PID namespace init: %q", out)
	}
	if out, code := sh("cat /proc/1/root" + secret); code == 0 || strings.Contains(out, "host secret") {
		t.Errorf("a host file read through /proc/1/root: exit %d, %q", code, out)
	}
	if out, _ := sh("ls -A /proc/1/root/ 2>&1"); strings.TrimSpace(out) != "" && !strings.Contains(out, "ermission denied") {
		t.Errorf("/proc/1/root holds %q; want an empty root", out)
	}
	ifaces := func(file string) []string {
		out, code := sh("cat " + file)
		if code != 0 {
			t.Fatalf("cat %s: %q", file, out)
		}
		var names []string
		for _, line := range strings.Split(out, "\n") {
			if name, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(name, "|") {
				names = append(names, strings.TrimSpace(name))
			}
		}
		slices.Sort(names)
		return names
	}
	if init, own := ifaces("/proc/1/net/dev"), ifaces("/proc/self/net/dev"); !slices.Equal(init, own) {
		t.Errorf("/proc/1/net shows interfaces %q, the pod's are %q", init, own)
	}
}
