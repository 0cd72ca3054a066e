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
	sup := exec.Command("sh", "-c", "sleep 60", "--pod-dir="+p.dir)
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sup.Process.Kill()
		sup.Wait()
	}()
	if err := fileperm.WriteFile(p.layout().Stage1PID(), []byte(strconv.Itoa(sup.Process.Pid)+"\n"), fileperm.Shared); err != nil {
		t.Fatal(err)
	}
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
