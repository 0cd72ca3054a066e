package main

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
)

// listen leaves the control socket at 0600 whatever the umask, connectable
// where clients look for it, and nothing else in the pod directory (it is
// bound in a private directory and moved into place).
func TestListenSocketPrivate(t *testing.T) {
	dir := t.TempDir()
	old := unix.Umask(0)
	defer unix.Umask(old)
	sv := &supervisor{podDir: dir}
	if err := sv.listen(); err != nil {
		t.Fatal(err)
	}
	defer sv.listener.Close()
	fi, err := os.Lstat(schema.PodDir(dir).Stage1Socket())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("stage1.sock is %v, want a socket 0600", fi.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("pod dir holds %d entries after listen, want only the socket", len(entries))
	}
	c, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(c)
	if err := unix.Connect(c, &unix.SockaddrUnix{Name: schema.PodDir(dir).Stage1Socket()}); err != nil {
		t.Errorf("connect to the moved socket: %v", err)
	}
}
