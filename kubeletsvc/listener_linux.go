package kubeletsvc

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
)

// lookupGroup resolves a group name (or numeric gid) to its gid.
func lookupGroup(name string) (int, error) {
	if name == "" {
		return 0, errors.New("no socket group given")
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		if gid, perr := strconv.Atoi(name); perr == nil && gid >= 0 {
			return gid, nil
		}
		return 0, fmt.Errorf("socket group %q does not exist (create it, e.g. `groupadd --system %s`, or pass --socket-group): %w", name, name, err)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return 0, fmt.Errorf("socket group %q has a non-numeric gid %q", name, g.Gid)
	}
	return gid, nil
}

// listen returns the socket-activated listener when systemd passed one
// (LISTEN_FDS), else creates the unix socket at path, replacing a stale one,
// with mode 0660, owner root and group gid. activated reports which.
func listen(path string, gid int) (l net.Listener, activated bool, err error) {
	ls, err := activation.Listeners()
	if err != nil {
		return nil, false, fmt.Errorf("cannot take the socket-activated listeners: %w", err)
	}
	for i, sl := range ls {
		if sl == nil {
			continue
		}
		if _, ok := sl.(*net.UnixListener); !ok {
			sl.Close()
			continue
		}
		for _, other := range ls[i+1:] {
			if other != nil {
				other.Close()
			}
		}
		return sl, true, nil
	}

	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, false, fmt.Errorf("cannot create the directory of socket %q: %w", path, err)
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, false, err
	}
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, false, fmt.Errorf("cannot listen on %q: %w", path, err)
	}
	ul.SetUnlinkOnClose(true)
	if err := os.Chown(path, 0, gid); err != nil {
		ul.Close()
		return nil, false, fmt.Errorf("cannot chown socket %q: %w", path, err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		ul.Close()
		return nil, false, fmt.Errorf("cannot chmod socket %q: %w", path, err)
	}
	return ul, false, nil
}

// staleSocketWait bounds how long removeStaleSocket waits for a socket whose
// server is dying (its listening socket outlives a SIGKILL until every
// thread has exited) to stop accepting.
var staleSocketWait = 5 * time.Second

// removeStaleSocket removes a socket file nobody listens on; it refuses to
// replace a socket that a live server answers on, or a file that is not a
// socket.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot stat socket %q: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("cannot listen on %q: it exists and is not a socket", path)
	}
	if err := waitUnanswered(path); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove stale socket %q: %w", path, err)
	}
	return nil
}

// waitUnanswered returns nil once connecting to path is refused. A gRPC
// server writes its HTTP/2 settings as soon as it accepts, so a connection
// that gets bytes is a live server; one that is accepted into the backlog
// of a killed, still exiting process gets none and is retried until
// staleSocketWait, then refused as held by an unresponsive process.
func waitUnanswered(path string) error {
	deadline := time.Now().Add(staleSocketWait)
	for {
		c, err := net.Dial("unix", path)
		if err != nil {
			return nil
		}
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, _ := c.Read(make([]byte, 1))
		c.Close()
		if n > 0 {
			return fmt.Errorf("cannot listen on %q: another server is answering on it", path)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cannot listen on %q: a process accepts connections on it but does not answer", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
