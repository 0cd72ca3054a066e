package kubeletsvc

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/kubeletsvc/internal/registrar"
	"github.com/rkt/rkt/pkg/exepages"
	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/store"
)

// criService implements the CRI RuntimeService and ImageService on stage0
// and the store.
type criService struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	cfg    Config
	log    *slog.Logger
	store  imageStore
	rt     podRuntime
	stream *lazyStream // set by Server.Serve before serving

	sandboxNames   *registrar.Registrar // name_namespace_uid_attempt -> pod UUID
	containerNames *registrar.Registrar // name_sandbox_attempt -> container ID
	events         *eventBus
	stats          *cpuSampler
	snap           atomic.Pointer[listSnapshot] // the last kept one
	pullMu         sync.Mutex
	pulls          int             // PullImage calls running
	pullAllocs     uint64          // the heap's allocations when the first of them began
	freeOSMemory   func()          // after pulls (tests: counts the calls): releaseMemory
	stopping       <-chan struct{} // closed when the service shuts down
	// creating holds the IDs of the sandboxes and containers being
	// created, from their name's reservation until their creation returns
	creating sync.Map
	// usernsErr says why pods cannot have user namespaces here (nil: they
	// can); probed once at start.
	usernsErr error
}

func newCRIService(cfg Config) (*criService, error) {
	st, err := store.Open(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	st.KeepIndex()           // ImageStatus before every container, from memory
	st.RemovesInBackground() // image GC's RemoveImage returns once the names are gone
	netCfg := stage0.NetConfig{DataDir: cfg.DataDir, ConfDir: cfg.CNIConfDir, PluginDirs: cfg.CNIPluginDirs}
	logger := cfg.Logger
	rt, err := stage0.New(stage0.Config{
		DataDir:      cfg.DataDir,
		Stage1Path:   cfg.Stage1Path,
		Criu:         cfg.Criu,
		Store:        st,
		Net:          netCfg,
		CgroupParent: cfg.CgroupParent,
		Watch:        true, // List*/Status* from memory
		Debug:        logger.Enabled(context.Background(), slog.LevelDebug),
		Logger:       logger.With("component", "stage0"),
	})
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	usernsErr := rt.UserNSSupported(pctx)
	cancel()
	if usernsErr != nil {
		logger.Info("pods cannot have user namespaces", "reason", usernsErr)
	}
	return newService(cfg, st, rt, usernsErr), nil
}

// newService returns a service on the given store and runtime; usernsErr
// says why pods cannot have user namespaces (nil: they can).
func newService(cfg Config, st imageStore, rt podRuntime, usernsErr error) *criService {
	c := &criService{
		usernsErr:      usernsErr,
		cfg:            cfg,
		log:            cfg.Logger,
		store:          st,
		rt:             rt,
		sandboxNames:   registrar.New(),
		containerNames: registrar.New(),
		events:         newEventBus(),
		stats:          newCPUSampler(),
		stopping:       make(chan struct{}),
	}
	c.freeOSMemory = c.releaseMemory
	return c
}

// releaseMemory returns the heap's free pages to the OS and drops the
// binary's pages: after a burst of pulls, whose code (TLS, HTTP, the
// registry client, the decompressors) only the next pull runs again.
func (c *criService) releaseMemory() {
	debug.FreeOSMemory()
	c.dropExePages()
}

// dropExePages unmaps the binary's code and read-only data
// (pkg/exepages): what the service runs again faults back at its next use.
func (c *criService) dropExePages() {
	if _, err := exepages.Drop(); err != nil {
		c.log.Warn("cannot release the executable's pages", "error", err)
	}
}

// close waits for the runtime's background work (stage0.Runtime.Close).
func (c *criService) close() {
	if cl, ok := c.rt.(interface{ Close() }); ok {
		cl.Close()
	}
}

// startBackground rebuilds the name reservations from the pod directories
// and starts the event watcher and the periodic repair (until ctx ends).
func (c *criService) startBackground(ctx context.Context) {
	if err := c.recover(ctx); err != nil {
		c.log.Error("cannot recover the CRI state from the pod directories", "error", err)
	}
	c.stopping = ctx.Done()
	go c.watchEvents(ctx)
	go c.repairLoop(ctx)
}
