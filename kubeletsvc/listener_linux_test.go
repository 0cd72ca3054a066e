package kubeletsvc

import (
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
)

func TestRemoveStaleSocketRefusesLiveServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	go srv.Serve(l)
	defer srv.Stop()
	err = removeStaleSocket(path)
	if err == nil || !strings.Contains(err.Error(), "another server is answering") {
		t.Fatalf("removeStaleSocket with a live gRPC server: %v", err)
	}
}

func TestRemoveStaleSocketRemovesDead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if err := removeStaleSocket(path); err != nil {
		t.Fatalf("removeStaleSocket of a socket nobody listens on: %v", err)
	}
}

// A killed server's listening socket accepts into its backlog until the
// process has exited; the socket is stale once it closes.
func TestRemoveStaleSocketWaitsForDyingServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 64); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(400*time.Millisecond, func() { syscall.Close(fd) })
	start := time.Now()
	if err := removeStaleSocket(path); err != nil {
		t.Fatalf("removeStaleSocket of a dying server's socket: %v", err)
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Fatalf("removed after %v, before the listener closed", d)
	}
}

func TestRemoveStaleSocketRefusesSilentListener(t *testing.T) {
	old := staleSocketWait
	staleSocketWait = 300 * time.Millisecond
	defer func() { staleSocketWait = old }()
	path := filepath.Join(t.TempDir(), "s.sock")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 64); err != nil {
		t.Fatal(err)
	}
	err = removeStaleSocket(path)
	if err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("removeStaleSocket with a silent listener: %v", err)
	}
}
