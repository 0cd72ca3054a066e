package tests

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rkt/rkt/tests/testutil"
)

// procsWithArgs returns the pids of the processes whose command line is
// args.
func procsWithArgs(args ...string) []int {
	want := []byte(strings.Join(args, "\x00") + "\x00")
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !bytes.Equal(b, want) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// holdsWithin polls cond every 50 ms until it holds or d passed; it reports
// whether it held.
func holdsWithin(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// TestCRIExecClientGone: a streaming exec (crictl exec through the
// service's streaming server, SPDY) whose client is killed while the
// process runs ends: the process in the container (a sleep, which
// neither reads its stdin nor writes) is gone within 5 s, reaped, and the
// service's and the pod supervisor's file descriptors and the service's
// threads are back to what they were before it; without stdin, with stdin
// on a pipe and on a terminal.
func TestCRIExecClientGone(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	_, img := pullTestImage(t, c)
	pod, ctr := runPodWithContainer(t, c, "exec-gone", img, podLogDirOf(t, svc))
	cc := newCrictl(t, svc)
	svcPid, supPid := svc.cmd.Process.Pid, sandboxPid(t, c, pod)
	for i, tc := range []struct {
		name  string
		flags []string
	}{
		{"no stdin", nil},
		{"stdin on a pipe", []string{"-i"}},
		{"terminal", []string{"-i", "-t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// an exec that ends, first: the streaming server is made on
			// first use and the supervisor is awake (not idle) after it
			cc.ok("exec", ctr, "true")
			time.Sleep(500 * time.Millisecond) // that crictl's connections closed
			fds, supFds, threads := fdCount(t, svcPid), fdCount(t, supPid), threadCount(t, svcPid)

			arg := strconv.Itoa(31337 + i)
			args := append([]string{"--runtime-endpoint", svc.Endpoint, "--image-endpoint", svc.Endpoint, "exec"}, tc.flags...)
			cmd := exec.Command(cc.bin, append(args, ctr, "sleep", arg)...)
			cmd.Env = append(os.Environ(), "CRI_CONFIG_FILE=/dev/null")
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = io.Discard, &stderr
			switch {
			case slices.Contains(tc.flags, "-t"):
				master, slave := openPTY(t)
				go io.Copy(io.Discard, master)
				cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
			case slices.Contains(tc.flags, "-i"):
				w, err := cmd.StdinPipe() // kept open: the client never ends stdin
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var pids []int
			if !holdsWithin(30*time.Second, func() bool { pids = procsWithArgs("sleep", arg); return len(pids) > 0 }) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the exec's process (sleep %s) did not start; crictl: %s", arg, stderr.String())
			}
			cmd.Process.Kill() // the client goes away: no stream is closed or reset first
			cmd.Wait()
			killed := time.Now()
			if !holdsWithin(5*time.Second, func() bool {
				for _, pid := range pids {
					if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
						return false
					}
				}
				return true
			}) {
				t.Fatalf("the exec's process %v (sleep %s) still exists 5 s after its client was killed", pids, arg)
			}
			gone := time.Since(killed)
			var nowFds, nowSupFds int
			if !holdsWithin(10*time.Second, func() bool {
				nowFds, nowSupFds = fdCount(t, svcPid), fdCount(t, supPid)
				return nowFds <= fds && nowSupFds <= supFds
			}) {
				t.Errorf("file descriptors 10 s after the exec ended: the service %d (%d before it), the supervisor %d (%d before it)", nowFds, fds, nowSupFds, supFds)
			}
			nowThreads := threadCount(t, svcPid)
			t.Logf("exec gone %v after its client; service fds %d -> %d, threads %d -> %d; supervisor fds %d -> %d",
				gone.Round(time.Millisecond), fds, nowFds, threads, nowThreads, supFds, nowSupFds)
			if nowThreads > threads+2 {
				t.Errorf("the service has %d threads after the exec, %d before it", nowThreads, threads)
			}
			if z := zombieChildren(svcPid); len(z) > 0 {
				t.Errorf("the service left exited children unreaped: %v", z)
			}
			if z := zombieChildren(supPid); len(z) > 0 {
				t.Errorf("the supervisor left exited children unreaped: %v", z)
			}
		})
	}
}
