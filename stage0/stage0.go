// Package stage0 is the pod lifecycle library behind every rkt pod command
// and the CRI server: it writes pod directories, mounts app root
// filesystems, sets up networking, starts the stage1 supervisor and drives
// the pod through rkt's lifecycle (prepare -> prepared -> run ->
// exited-garbage -> garbage). It never exits or changes the working
// directory of the calling process and is safe for concurrent callers on
// different pods.
package stage0

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/rkt/rkt/networking"
	"github.com/rkt/rkt/pkg/buildinfo"
	"github.com/rkt/rkt/store"
)

// DefaultCgroupParent is the cgroup under which pods are created when
// Config.CgroupParent is empty.
const DefaultCgroupParent = "/rkt"

// Config configures a Runtime.
type Config struct {
	DataDir      string            // rkt data directory (--dir); pods live in <DataDir>/pods
	Stage1Path   string            // stage1 binary; empty: DefaultStage1Path()
	Store        *store.Store      // the image store; used through StoreImages when Images is nil
	Images       ImageSource       // resolves image references; overrides Store (tests)
	Net          networking.Config // CNI configuration; Net.DataDir defaults to DataDir
	CgroupParent string            // default cgroup parent of pods; empty: DefaultCgroupParent
	Debug        bool              // run stage1 with --debug
	Criu         string            // criu binary of checkpoints; empty: criu from PATH
	// Watch keeps the pods' state in memory (List, Status and AppSpec
	// answer from it), kept coherent with the disk by inotify and pidfds,
	// and their stats, refreshed every statsInterval in the background,
	// and deletes removed apps' directories in the background (app_drop.go):
	// for long-lived callers (the kubelet-service); Close releases it.
	Watch bool
	// Logger receives debug messages and warnings; nil discards them.
	Logger *slog.Logger
}

// Image is what stage0 needs of an image to run an app from it.
type Image struct {
	ID     string         // sha256:<config digest>
	Name   string         // normalized name:tag (or the reference given)
	Config *v1.ConfigFile // image configuration (user, env, entrypoint, cmd, workdir...)
	Layers []string       // unpacked layer directories, lowest first (overlay lowerdirs)
}

// ImageSource resolves image references for stage0.
type ImageSource interface {
	// AppImage resolves ref (ID, ID prefix, name[:tag], name@digest) to an
	// image whose layers are unpacked and ready to be used as lowerdirs.
	AppImage(ctx context.Context, ref string) (*Image, error)
	// Hold keeps the layers of the images it resolves from being deleted
	// until it is closed: stage0 holds it from resolving an app's images
	// until the pod manifest lists the app (and its rootfs is mounted).
	Hold(ctx context.Context) (io.Closer, error)
}

// Runtime runs pods in one data directory.
type Runtime struct {
	cfg     Config
	log     *slog.Logger
	view    *podView    // nil unless Config.Watch
	stats   *statsCache // nil unless Config.Watch
	unwatch func()      // ends what Config.Watch started
	// removals are the background deletions of removed apps (Config.Watch)
	removals backgroundRemovals
	// unreadable holds the pods a list left out (UUID -> error), each
	// logged once
	unreadable sync.Map
}

// New returns a Runtime for cfg, filling defaults.
func New(cfg Config) (*Runtime, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("stage0: no data directory configured")
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	cfg.DataDir = dir
	if cfg.Stage1Path == "" {
		cfg.Stage1Path = DefaultStage1Path()
	}
	if cfg.Images == nil && cfg.Store != nil {
		cfg.Images = StoreImages(cfg.Store)
	}
	if cfg.Net.DataDir == "" {
		cfg.Net.DataDir = cfg.DataDir
	}
	if cfg.CgroupParent == "" {
		cfg.CgroupParent = DefaultCgroupParent
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Runtime{cfg: cfg, log: cfg.Logger}
	if cfg.Watch {
		v, err := newPodView(r)
		if err != nil {
			return nil, err
		}
		r.view = v
		r.stats = &statsCache{m: map[string]*AppStats{}}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		// the loop may record a dead supervisor's apps (a status read
		// does): Close returns once it cannot write any more
		r.unwatch = func() { cancel(); <-done }
		go func() { defer close(done); r.statsLoop(ctx) }()
	}
	return r, nil
}

// Close stops what New started for Config.Watch.
func (r *Runtime) Close() {
	r.waitRemovals("")
	if r.view != nil {
		r.unwatch()
		r.view.close()
	}
}

// changed tells the view that a call changed the pods a UUID (prefix)
// names.
func (r *Runtime) changed(uuid string) {
	if r.view != nil {
		r.view.changed(uuid)
	}
}

// Config returns the runtime's configuration with defaults filled in.
func (r *Runtime) Config() Config { return r.cfg }

// DefaultStage1Path returns `stage1` next to the running executable when it
// exists, else the configure-time buildinfo.Stage1Path.
func DefaultStage1Path() string {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "stage1")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return buildinfo.Stage1Path
}
