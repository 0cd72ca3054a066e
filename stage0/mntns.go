package stage0

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// A mount lives in the mount namespace where it was made. A pod's
// supervisor stays in the one it was started in, with the pod's namespace
// files (<pod>/userns, ipcns, utsns, netns: nsfs bind mounts) and the
// rootfs of the apps it runs. A caller in another mount namespace, e.g. a
// kubelet-service restarted under `unshare --mount` or as a systemd unit
// with private mounts (each start gets a new, private one), sees there only
// the empty files and directories under those mounts, and the supervisor
// sees none of the mounts that caller makes.

// supervisorMountNS is the mount namespace of a pod's running supervisor
// that is not this process's.
type supervisorMountNS struct {
	pid   int
	pidfd *os.File
}

// podMountNS returns the mount namespace of p's supervisor if it runs in
// another mount namespace than this process; nil if it runs in the same
// one or does not run.
func podMountNS(p *pod) (*supervisorMountNS, error) {
	pid := stage1PID(p)
	if pid <= 0 {
		return nil, nil
	}
	own, err := ownMountNS()
	if err != nil {
		return nil, err
	}
	// The usual case, on every CreateContainer: one stat.
	var its unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d/ns/mnt", pid), &its); err != nil || (own.Dev == its.Dev && own.Ino == its.Ino) {
		return nil, nil
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, nil
	}
	m := &supervisorMountNS{pid: pid, pidfd: os.NewFile(uintptr(fd), "pidfd")}
	// Checked after the open: the fd is that process.
	if !supervisorAlive(p, pid) || m.alive() != nil {
		m.Close()
		return nil, nil
	}
	return m, nil
}

// ownMountNS is this process's mount namespace, which does not change (a
// multithreaded process cannot join another).
var ownMountNS = sync.OnceValues(func() (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/mnt", &st); err != nil {
		return st, fmt.Errorf("cannot stat %q: %w", "/proc/self/ns/mnt", err)
	}
	return st, nil
})

// Close releases m; a no-op on nil.
func (m *supervisorMountNS) Close() {
	if m != nil {
		m.pidfd.Close()
	}
}

// alive fails once the supervisor has exited.
func (m *supervisorMountNS) alive() error {
	if err := unix.PidfdSendSignal(int(m.pidfd.Fd()), 0, nil, 0); err != nil {
		return fmt.Errorf("the supervisor (pid %d) has exited: %w", m.pid, err)
	}
	return nil
}

// open opens path as the supervisor sees it (as this process does when m
// is nil).
func (m *supervisorMountNS) open(path string) (*os.File, error) {
	if m == nil {
		return os.Open(path)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/root%s", m.pid, path))
	if err != nil {
		return nil, err
	}
	if err := m.alive(); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// adopt moves the mounts at dirs (with those below them), made by this
// process, into the supervisor's mount namespace, by `stage1
// attach-mounts`; a dir that is a mount point there already keeps its
// mount. Dirs not mounted here are skipped. This process's mounts go
// either way. A no-op on nil.
func (m *supervisorMountNS) adopt(stage1 string, dirs []string) (err error) {
	if m == nil {
		return nil
	}
	files := []*os.File{m.pidfd}
	var targets []string
	defer func() {
		for _, f := range files[1:] {
			f.Close()
		}
		for _, d := range targets {
			if uerr := unmountUnder(d); uerr != nil {
				err = errors.Join(err, uerr)
			}
		}
	}()
	for _, d := range dirs {
		if mounted, err := mountinfo.Mounted(d); err != nil || !mounted {
			continue
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, d, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			targets = append(targets, d)
			return fmt.Errorf("cannot clone mount %q: %w", d, err)
		}
		files = append(files, os.NewFile(uintptr(fd), d))
		targets = append(targets, d)
	}
	if len(targets) == 0 {
		return nil
	}
	cmd := exec.Command(stage1, append([]string{"attach-mounts"}, targets...)...)
	cmd.ExtraFiles = files
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cannot mount %s in the mount namespace of the pod's supervisor (pid %d): %w: %s",
			strings.Join(targets, ", "), m.pid, err, strings.TrimSpace(string(out)))
	}
	return nil
}
