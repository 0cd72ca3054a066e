package stage0

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/lock"
	"github.com/rkt/rkt/stage1/control"
)

// pidfds counts this process's open pidfds.
func pidfds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && l == "anon_inode:[pidfd]" {
			n++
		}
	}
	return n
}

// TestStopSupervisorDeadlineClosesPidfd: a stop whose caller's deadline
// passes while the supervisor has not answered its shutdown request
// fails, and keeps no descriptor of the supervisor (the kubelet-service
// lives on, and retries).
func TestStopSupervisorDeadlineClosesPidfd(t *testing.T) {
	rt := newTestRuntime(t)
	p, l := fakeSupervisorPod(t, rt)
	// A supervisor that takes the shutdown request and never answers.
	fakeSupervisorProcess(t, p)
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	fd := openSupervisorPidfd(p)
	if fd < 0 {
		t.Skip("no pidfd of the fake supervisor (kernel without pidfd_open?)")
	}
	unix.Close(fd)
	before := pidfds(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := rt.stopSupervisor(ctx, p, StopOptions{Timeout: time.Second}); err == nil {
		t.Fatal("a stop past its deadline succeeded")
	}
	if after := pidfds(t); after != before {
		t.Errorf("%d pidfds open after the failed stop, %d before", after, before)
	}
}

// fakeSupervisorPod makes a running pod's directory in rt and listens on
// its supervisor's control socket, for a test to answer as the supervisor.
func fakeSupervisorPod(t *testing.T, rt *Runtime) (*pod, net.Listener) {
	t.Helper()
	uuid, err := NewUUID()
	if err != nil {
		t.Fatal(err)
	}
	p := rt.podAt(dirRun, uuid)
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	addr, release, err := control.ShortSocketPath(p.layout().Stage1Socket())
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", addr)
	release()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return p, l
}

// TestRunningPodThroughOtherDataDirName: a running pod is running for
// every caller, whatever name of the data directory it was given (--dir
// through a symlink, e.g. /var/lib/rkt -> /srv/rkt, in the CLI and the
// real path in the service's paths.d). The supervisor is recognized by the
// --pod-dir of its command line, compared as a string with the caller's
// spelling: the pod was reported exited, `rkt stop` then waited forever for
// its lock and `rkt rm` failed.
func TestRunningPodThroughOtherDataDirName(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	rt, err := New(Config{DataDir: real, Images: fakeImages{}, Stage1Path: "/nonexistent/stage1"})
	if err != nil {
		t.Fatal(err)
	}
	viaLink, err := New(Config{DataDir: link, Images: fakeImages{}, Stage1Path: "/nonexistent/stage1"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := fakeSupervisorPod(t, rt)
	fakeSupervisorProcess(t, p)
	l, err := lock.TryExclusive(p.dir, lock.Dir) // the supervisor's lock
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for name, r := range map[string]*Runtime{"real": rt, "link": viaLink} {
		q := r.podAt(dirRun, p.uuid)
		st, err := q.podState()
		if err != nil {
			t.Fatal(err)
		}
		if st != PodRunning {
			t.Errorf("data dir by its %s name (%s): pod is %s, want %s", name, r.cfg.DataDir, st, PodRunning)
		}
	}
}

// fakeSupervisorProcess starts a process that passes for p's stage1 (its
// command line names the pod's directory) and records it as such.
func fakeSupervisorProcess(t *testing.T, p *pod) *exec.Cmd {
	t.Helper()
	sup := exec.Command("sh", "-c", "sleep 60", "--pod-dir="+p.dir)
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sup.Process.Kill()
		sup.Wait()
	})
	if err := fileperm.WriteFile(p.layout().Stage1PID(), []byte(strconv.Itoa(sup.Process.Pid)+"\n"), fileperm.Shared); err != nil {
		t.Fatal(err)
	}
	return sup
}
