package networking

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/proc"
)

// orphanWait bounds the wait for killed orphaned plugins to be gone.
const orphanWait = 10 * time.Second

// killOrphanedPlugins SIGKILLs the CNI plugin processes still running for
// the pod uuid, and the processes they started (all inherit the
// CNI_CONTAINERID of the call), and waits until they are gone. A stage0
// killed during an ADD leaves its plugins running: finishing after the
// Teardown that follows, they would create what its DEL removed. Teardown
// runs under the pod lock, which a live stage0 holds during its ADDs, so
// the processes found are orphans.
func killOrphanedPlugins(ctx context.Context, uuid string) error {
	pids, err := proc.PIDs()
	if err != nil {
		return err
	}
	want := []byte("CNI_CONTAINERID=" + uuid + "\x00")
	self := os.Getpid()
	var pidfds []int
	defer func() {
		for _, fd := range pidfds {
			unix.Close(fd)
		}
	}()
	for _, pid := range pids {
		if pid == self || !hasEnv(pid, want) {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone
		}
		if !hasEnv(pid, want) { // the pid was reused before the pidfd
			unix.Close(fd)
			continue
		}
		pidfds = append(pidfds, fd)
		if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("cannot kill orphaned CNI plugin process %d of pod %q: %w", pid, uuid, err)
		}
	}
	deadline := time.Now().Add(orphanWait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	for _, fd := range pidfds {
		if err := waitExit(fd, deadline); err != nil {
			return fmt.Errorf("orphaned CNI plugin of pod %q: %w", uuid, err)
		}
	}
	return nil
}

// hasEnv reports whether process pid has the environment entry entry
// ("NAME=value\x00"); a zombie has no environment.
func hasEnv(pid int, entry []byte) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	return bytes.HasPrefix(env, entry) || bytes.Contains(env, append([]byte{0}, entry...))
}

// waitExit waits until the process of pidfd has exited or deadline passed.
func waitExit(pidfd int, deadline time.Time) error {
	for {
		ms := int(time.Until(deadline).Milliseconds())
		if ms <= 0 {
			return errors.New("still running after SIGKILL")
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("cannot wait for its exit: %w", err)
		}
		if n > 0 {
			return nil
		}
	}
}
