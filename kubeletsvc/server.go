// Package kubeletsvc is `rkt kubelet-service`: the Kubernetes CRI v1
// RuntimeService and ImageService, served on a unix socket, translated to
// stage0 (pods) and store (images). It holds no pod logic of its own: every
// piece of state it reports is read back from the pod directories and the
// store, so a restarted service finds everything where it left it.
package kubeletsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Config configures the service. Zero values take the defaults noted.
type Config struct {
	DataDir         string        // rkt data directory (global --dir)
	SocketPath      string        // unix socket to create when not socket-activated
	SocketGroup     string        // group allowed on the socket besides root
	StreamAddr      string        // streaming server address; default 127.0.0.1:0
	Stage1Path      string        // stage1 binary; empty: stage0.DefaultStage1Path()
	Criu            string        // criu binary of CheckpointPod; empty: criu from PATH
	CgroupParent    string        // cgroup parent of the pods; default stage0's
	CNIConfDir      string        // CNI network configs for the pods
	CNIPluginDirs   []string      // CNI plugin directories
	ConfigDirs      []string      // rkt config dirs, lowest precedence first (registries, auth)
	InsecureHTTP    bool          // allow plain HTTP to any registry
	ShutdownTimeout time.Duration // bound on finishing in-flight calls; default 10s
	RepairInterval  time.Duration // how often crash debris is collected besides at start; default 5m
	RuntimeHandlers []string      // extra runtime handler names, run like the default handler
	// CheckpointRestore allows restores (RestorePod, CreateContainer from a
	// checkpoint archive or image): criu gives a restored process the
	// credentials and capabilities its checkpoint's images say, so only
	// where whoever names a pod's image is trusted with root.
	CheckpointRestore bool
	Logger            *slog.Logger // default: slog.Default()
}

// maxMsgSize bounds gRPC messages both ways: the kubelet's CRI client sends
// and accepts up to 16 MiB (grpc's default server limit is 4 MiB).
const maxMsgSize = 16 << 20

// recvWindow is the server's HTTP/2 receive window, per stream and per
// connection.
const recvWindow = 1 << 20

// Server is a running-or-ready kubelet-service.
type Server struct {
	cfg  Config
	log  *slog.Logger
	gid  int
	svc  *criService
	grpc *grpc.Server
}

// New validates cfg and prepares the service; it opens no socket yet.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.StreamAddr == "" {
		cfg.StreamAddr = "127.0.0.1:0"
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	if cfg.DataDir == "" {
		return nil, errors.New("kubelet-service: no data directory given")
	}
	gid, err := lookupGroup(cfg.SocketGroup)
	if err != nil {
		return nil, fmt.Errorf("kubelet-service cannot start: %w", err)
	}
	svc, err := newCRIService(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubelet-service cannot start: %w", err)
	}
	in := &instrument{log: cfg.Logger, auth: &authorizer{gid: gid, groupsOf: procGroups}}
	g := newGRPCServer(svc, in, grpc.Creds(peerCreds{}))
	return &Server{cfg: cfg, log: cfg.Logger, gid: gid, svc: svc, grpc: g}, nil
}

// newGRPCServer serves svc's CRI services through in (and opts), within
// the kubelet's message limits.
func newGRPCServer(svc *criService, in *instrument, opts ...grpc.ServerOption) *grpc.Server {
	g := grpc.NewServer(append(opts,
		grpc.MaxRecvMsgSize(maxMsgSize),
		grpc.MaxSendMsgSize(maxMsgSize),
		grpc.ChainUnaryInterceptor(in.unary),
		grpc.ChainStreamInterceptor(in.stream),
		grpc.ForceServerCodecV2(newCodec(svc)),
		// calls run on kept goroutines, whose stacks have grown already,
		// not each on a new one
		grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))),
		// fixed receive windows: with grpc's dynamic ones every request
		// that finds no ping in flight makes the server send a window
		// update and a BDP ping, and wake again for the client's ack.
		// Requests are small (the largest, a CreateContainer, is a few
		// KiB), so a window of 1 MiB never holds a client back.
		grpc.StaticStreamWindowSize(recvWindow),
		grpc.StaticConnWindowSize(recvWindow),
		// Stop (at the shutdown timeout) cancels the calls and waits for
		// them to return: a cancelled call releases what it made
		grpc.WaitForHandlers(true),
	)...)
	runtimeapi.RegisterRuntimeServiceServer(g, svc)
	runtimeapi.RegisterImageServiceServer(g, svc)
	return g
}

// Serve listens (socket activation or its own socket), serves until ctx is
// done, then stops accepting, lets in-flight calls finish within the
// shutdown bound and returns. Pods keep running.
func (s *Server) Serve(ctx context.Context) error {
	st, err := newLazyStream(s.cfg.StreamAddr, &streamRuntime{svc: s.svc}, s.log)
	if err != nil {
		return err
	}
	s.svc.stream = st
	defer st.close()

	l, activated, err := listen(s.cfg.SocketPath, s.gid)
	if err != nil {
		return err
	}
	s.log.Info("kubelet-service listening", "socket", l.Addr().String(), "socketActivated", activated, "streaming", st.baseURL().String())
	var gcDone atomic.Bool
	defer gcDone.Store(true)
	tuneGC(&gcDone)
	s.svc.startBackground(ctx)

	served := make(chan error, 1)
	go func() { served <- s.grpc.Serve(l) }()
	if _, err := daemon.SdNotify(false, daemon.SdNotifyReady); err != nil {
		s.log.Warn("cannot notify systemd", "error", err)
	}
	// what only start-up ran (package initialisation, the recovery of the
	// pods) leaves the resident set
	s.svc.dropExePages()

	select {
	case err := <-served:
		return fmt.Errorf("kubelet-service stopped serving: %w", err)
	case <-ctx.Done():
	}
	daemon.SdNotify(false, daemon.SdNotifyStopping)
	s.log.Info("kubelet-service stopping")
	done := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.cfg.ShutdownTimeout):
		s.log.Warn("in-flight calls did not finish in time; cancelling them", "timeout", s.cfg.ShutdownTimeout)
		go s.grpc.Stop() // returns once every handler has
		select {
		case <-done:
		case <-time.After(cancelledCallsWait):
			s.log.Error("cancelled calls did not end in time; exiting with them cut off (the repair at the next start collects what they left)", "timeout", cancelledCallsWait)
			return nil
		}
	}
	// stage0's work in the background (the deletion of removed apps)
	closed := make(chan struct{})
	go func() { s.svc.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(cancelledCallsWait):
		s.log.Warn("background work did not end in time", "timeout", cancelledCallsWait)
	}
	return nil
}

// cancelledCallsWait bounds the wait for cancelled calls (each releasing
// what it made) and background work at shutdown, after the shutdown
// timeout; with the default one, the two stay within the unit's
// TimeoutStopSec (30 s).
var cancelledCallsWait = 15 * time.Second
