package kubeletsvc

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

// rollbackRuntime is a fakeRuntime whose Sandbox runs until its call is
// cancelled and then takes a while to release what it made, as stage0's
// does (with a context of its own: cleanupTimeout).
type rollbackRuntime struct {
	*fakeRuntime
	started    chan struct{}
	rolledBack atomic.Bool
}

func (r *rollbackRuntime) Sandbox(ctx context.Context, opts stage0.PodOptions) (string, error) {
	close(r.started)
	<-ctx.Done()
	time.Sleep(300 * time.Millisecond)
	r.rolledBack.Store(true)
	return "", ctx.Err()
}

// TestServeShutdownEndsCalls: on SIGTERM, a call still running at the
// shutdown timeout is cancelled, and Serve (after which the process
// exits) returns only once it has ended: not while it releases what it
// made, which the exit would cut off half-done.
func TestServeShutdownEndsCalls(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the socket is chowned to root")
	}
	rt := &rollbackRuntime{fakeRuntime: newFakeRuntime(), started: make(chan struct{})}
	path := filepath.Join(t.TempDir(), "s.sock")
	cfg := Config{DataDir: rt.cfg.DataDir, SocketPath: path, StreamAddr: "127.0.0.1:0",
		ShutdownTimeout: 100 * time.Millisecond, RepairInterval: time.Hour,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	svc := newService(cfg, newFakeStore(), rt, nil)
	s := &Server{cfg: cfg, log: cfg.Logger, gid: os.Getgid(), svc: svc, grpc: newGRPCServer(svc, &instrument{log: cfg.Logger})}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()

	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the service did not listen")
		}
	}
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go runtimeapi.NewRuntimeServiceClient(conn).RunPodSandbox(context.Background(),
		&runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("web")})
	select {
	case <-rt.started:
	case <-time.After(10 * time.Second):
		t.Fatal("RunPodSandbox did not reach stage0")
	}
	stop() // SIGTERM
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	if !rt.rolledBack.Load() {
		t.Fatal("Serve returned (the process exits) while a cancelled call was still releasing what it made")
	}
}
