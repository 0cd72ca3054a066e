package kubeletsvc

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/lock"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/store"
)

// The fakes below stand for stage0 and the store in the unit tests of the
// RPCs: pods and apps live in memory, go through stage0's state
// transitions and fail with its sentinel errors. They hold no CRI logic;
// what the tests check is the service's.

// fakeRuntime is an in-memory podRuntime.
type fakeRuntime struct {
	mu       sync.Mutex
	pods     map[string]*stage0.PodStatus // by UUID
	order    []string                     // UUIDs, oldest first
	podOpts  map[string]stage0.PodOptions // Sandbox's options, by UUID
	criuErr  error                        // Criu's answer
	archives map[string]string            // OpenContainerArchive: checkpoint directory by archive path
	appOpts  map[string]stage0.AppOptions // AddApp's options, by appKey
	specs    map[string]*specs.Spec       // AppSpec's result, by appKey
	stats    map[string]*stage0.AppStats  // by appKey, and by UUID for the pod
	calls    []string                     // "Stop <uuid>", "StopApp <uuid>/<app> force", ...
	updated  map[string]*specs.LinuxResources
	pid      int
	gen      uint64 // Generation; 0 (the default) keeps nothing
	// sharedStats: AppStats and PodStats return the kept *AppStats, as
	// stage0 does (not a copy)
	sharedStats bool
	// sharedPods: List and Status return the same *PodStatus while the
	// pod is unchanged, as stage0's view does (not a new copy each time)
	sharedPods bool
	shared     map[string]*stage0.PodStatus
	// gcLock: GC waits for an exclusive lock of this file until its context ends
	gcLock string
	// unreadable: pods whose status cannot be read (a newer rkt's
	// manifest, a corrupt file), by UUID: lists leave them out and Status
	// fails with the error, as stage0 does
	unreadable map[string]error

	sandboxErr error                                                           // Sandbox fails with it, leaving an exited pod
	exec       func(ctx context.Context, opts stage0.ExecOptions) (int, error) // nil: exit 0, no output
	netReady   bool
	netWhy     string
	podNet     string
	cidr       string
	cfg        stage0.Config
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{
		pods:     map[string]*stage0.PodStatus{},
		podOpts:  map[string]stage0.PodOptions{},
		appOpts:  map[string]stage0.AppOptions{},
		specs:    map[string]*specs.Spec{},
		stats:    map[string]*stage0.AppStats{},
		updated:  map[string]*specs.LinuxResources{},
		pid:      1000,
		netReady: true,
		podNet:   "default",
		cfg:      stage0.Config{DataDir: "/var/lib/rkt", Stage1Path: "/usr/lib/rkt/stage1"},
	}
}

func appKey(uuid, app string) string { return uuid + "/" + app }

func (f *fakeRuntime) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

// called returns the calls recorded so far.
func (f *fakeRuntime) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string{}, f.calls...)
}

// pod returns the pod uuid (exactly), or ErrPodNotFound.
func (f *fakeRuntime) pod(uuid string) (*stage0.PodStatus, error) {
	p, ok := f.pods[uuid]
	if !ok {
		return nil, fmt.Errorf("pod %s: %w", uuid, stage0.ErrPodNotFound)
	}
	return p, nil
}

func (f *fakeRuntime) runningPod(uuid string) (*stage0.PodStatus, error) {
	p, err := f.pod(uuid)
	if err != nil {
		return nil, err
	}
	if p.State != stage0.PodRunning {
		return nil, fmt.Errorf("pod %s is %s: %w", uuid, p.State, stage0.ErrNotRunning)
	}
	return p, nil
}

func (f *fakeRuntime) app(uuid, name string) (*stage0.PodStatus, *stage0.AppStatus, error) {
	p, err := f.pod(uuid)
	if err != nil {
		return nil, nil, err
	}
	for i := range p.Apps {
		if p.Apps[i].Name == name {
			return p, &p.Apps[i], nil
		}
	}
	return nil, nil, fmt.Errorf("app %q of pod %s: %w", name, uuid, stage0.ErrAppNotFound)
}

func copyPod(p *stage0.PodStatus) *stage0.PodStatus {
	c := *p
	c.Apps = append([]stage0.AppStatus{}, p.Apps...)
	if p.Manifest != nil {
		m := *p.Manifest
		c.Manifest = &m
	}
	return &c
}

func (f *fakeRuntime) Sandbox(_ context.Context, opts stage0.PodOptions) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if opts.UUID == "" {
		return "", fmt.Errorf("%w: no UUID", stage0.ErrInvalid)
	}
	now := time.Now()
	f.pid++
	p := &stage0.PodStatus{
		UUID:      opts.UUID,
		State:     stage0.PodRunning,
		Dir:       "/var/lib/rkt/pods/run/" + opts.UUID,
		Stage1PID: f.pid,
		CreatedAt: now,
		StartedAt: now,
		Manifest: &schema.PodManifest{Version: schema.Version, UUID: opts.UUID, Hostname: opts.Hostname, Net: opts.Net,
			CgroupParent: opts.CgroupParent, OwnCgroupParent: opts.OwnCgroupParent, Annotations: copyMap(opts.Annotations)},
	}
	if opts.Net != stage0.NetHost && opts.Net != "none" {
		p.Networks = []stage0.NetworkStatus{{Name: opts.Net, Interface: "eth0", IPs: []string{fmt.Sprintf("10.88.0.%d/16", len(f.order)+2)}}}
	}
	f.pods[opts.UUID] = p
	f.order = append(f.order, opts.UUID)
	f.podOpts[opts.UUID] = opts
	f.record("Sandbox %s", opts.UUID)
	if f.sandboxErr != nil {
		p.State, p.Stage1PID = stage0.PodExited, 0
		return "", f.sandboxErr
	}
	return opts.UUID, nil
}

func (f *fakeRuntime) Stop(_ context.Context, uuid string, opts stage0.StopOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Stop %s", uuid)
	p, err := f.runningPod(uuid)
	if err != nil {
		return err
	}
	now := time.Now()
	for i := range p.Apps {
		if a := &p.Apps[i]; a.State == schema.AppRunning {
			a.State, a.Pid, a.ExitCode, a.Signal, a.FinishedAt = schema.AppExited, 0, 137, "SIGKILL", now
		}
	}
	p.State, p.Stage1PID, p.FinishedAt = stage0.PodExited, 0, now
	return nil
}

func (f *fakeRuntime) Remove(_ context.Context, uuid string, force bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Remove %s", uuid)
	p, err := f.pod(uuid)
	if err != nil {
		return err
	}
	if p.State == stage0.PodRunning && !force {
		return fmt.Errorf("pod %s is running: stop it first: %w", uuid, stage0.ErrInvalidState)
	}
	delete(f.pods, uuid)
	for i, u := range f.order {
		if u == uuid {
			f.order = append(f.order[:i], f.order[i+1:]...)
			break
		}
	}
	return nil
}

func (f *fakeRuntime) List(context.Context) ([]*stage0.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*stage0.PodStatus
	for _, u := range f.order {
		if f.unreadable[u] == nil {
			out = append(out, f.podStatus(u))
		}
	}
	return out, nil
}

// podStatus returns a copy of a pod's status; with sharedPods, the same
// copy while the pod is unchanged. f.mu held.
func (f *fakeRuntime) podStatus(uuid string) *stage0.PodStatus {
	c := copyPod(f.pods[uuid])
	if !f.sharedPods {
		return c
	}
	if k := f.shared[uuid]; k != nil && reflect.DeepEqual(k, c) {
		return k
	}
	if f.shared == nil {
		f.shared = map[string]*stage0.PodStatus{}
	}
	f.shared[uuid] = c
	return c
}

func (f *fakeRuntime) ListGen(ctx context.Context) ([]*stage0.PodStatus, uint64, error) {
	gen := f.Generation()
	l, err := f.List(ctx)
	return l, gen, err
}

func (f *fakeRuntime) Generation() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen
}

// Status resolves a unique UUID prefix, as stage0 does.
func (f *fakeRuntime) Status(_ context.Context, prefix string) (*stage0.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var found []string
	for _, u := range f.order {
		if strings.HasPrefix(u, prefix) {
			found = append(found, u)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("pod %q: %w", prefix, stage0.ErrPodNotFound)
	case 1:
		if err := f.unreadable[found[0]]; err != nil {
			return nil, err
		}
		return f.podStatus(found[0]), nil
	}
	return nil, fmt.Errorf("pod %q: %w", prefix, stage0.ErrAmbiguousUUID)
}

func (f *fakeRuntime) GC(ctx context.Context, opts stage0.GCOptions) (*stage0.GCResult, error) {
	f.mu.Lock()
	f.record("GC debrisOnly=%v", opts.DebrisOnly)
	gcLock := f.gcLock
	f.mu.Unlock()
	if gcLock != "" {
		// as networking.GC waits for a network's IPAM lock: until ctx ends
		l, err := lock.Exclusive(ctx, gcLock, lock.RegFile)
		if err != nil {
			return &stage0.GCResult{Network: err}, nil
		}
		l.Close()
	}
	return &stage0.GCResult{}, nil
}

func (f *fakeRuntime) AddApp(_ context.Context, uuid string, opts stage0.AppOptions) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.runningPod(uuid)
	if err != nil {
		return "", err
	}
	for _, a := range p.Apps {
		if a.Name == opts.Name {
			return "", fmt.Errorf("app %q of pod %s: %w", opts.Name, uuid, stage0.ErrAppExists)
		}
	}
	now := time.Now()
	p.Apps = append(p.Apps, stage0.AppStatus{
		AppStatus: schema.AppStatus{Name: opts.Name, State: schema.AppCreated, CreatedAt: now},
		App: schema.App{Name: opts.Name, Image: schema.AppImage{ID: opts.Image}, Annotations: copyMap(opts.Annotations),
			LogPath: opts.LogPath, StopSignal: opts.StopSignal, TTY: opts.TTY, Stdin: opts.Stdin, CreatedAt: now},
		LogPath: opts.LogPath,
	})
	f.appOpts[appKey(uuid, opts.Name)] = opts
	if opts.RestoreFrom != nil { // the spec RestorePod checks
		f.specs[appKey(uuid, opts.Name)] = &specs.Spec{Process: &specs.Process{Args: append(slices.Clone(opts.Exec), opts.Args...), Cwd: opts.WorkingDir}}
	}
	f.record("AddApp %s/%s", uuid, opts.Name)
	return opts.Name, nil
}

func (f *fakeRuntime) StartApp(_ context.Context, uuid, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("StartApp %s/%s", uuid, name)
	a, err := f.appIn(uuid, name, schema.AppCreated, stage0.ErrInvalidState)
	if err != nil {
		return err
	}
	f.pid++
	a.State, a.Pid, a.StartedAt = schema.AppRunning, f.pid, time.Now()
	return nil
}

func (f *fakeRuntime) StopApp(_ context.Context, uuid, name string, opts stage0.StopOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("StopApp %s/%s force=%v timeout=%v", uuid, name, opts.Force, opts.Timeout)
	_, a, err := f.app(uuid, name)
	if err != nil {
		return err
	}
	if a.State != schema.AppRunning {
		return fmt.Errorf("app %q: %w", name, stage0.ErrNotRunning)
	}
	a.State, a.Pid, a.FinishedAt = schema.AppExited, 0, time.Now()
	a.ExitCode, a.Signal = 143, "SIGTERM"
	if opts.Force {
		a.ExitCode, a.Signal = 137, "SIGKILL"
	}
	return nil
}

func (f *fakeRuntime) RemoveApp(_ context.Context, uuid, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RemoveApp %s/%s", uuid, name)
	p, _, err := f.app(uuid, name)
	if err != nil {
		return err
	}
	for i := range p.Apps {
		if p.Apps[i].Name == name {
			p.Apps = append(p.Apps[:i], p.Apps[i+1:]...)
			break
		}
	}
	delete(f.appOpts, appKey(uuid, name))
	return nil
}

func (f *fakeRuntime) AppSpec(uuid, name string) (*specs.Spec, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.specs[appKey(uuid, name)]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("spec of app %q of pod %s: %w", name, uuid, fs.ErrNotExist)
}

// appIn returns an app of a running pod that is in state, else notIn.
func (f *fakeRuntime) appIn(uuid, name string, state schema.AppState, notIn error) (*stage0.AppStatus, error) {
	if _, err := f.runningPod(uuid); err != nil {
		return nil, err
	}
	_, a, err := f.app(uuid, name)
	if err != nil {
		return nil, err
	}
	if a.State != state {
		return nil, fmt.Errorf("app %q is %s: %w", name, a.State, notIn)
	}
	return a, nil
}

func (f *fakeRuntime) runningApp(uuid, name string) error {
	_, err := f.appIn(uuid, name, schema.AppRunning, stage0.ErrNotRunning)
	return err
}

func (f *fakeRuntime) UpdateAppResources(_ context.Context, uuid, name string, res *specs.LinuxResources) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.runningApp(uuid, name); err != nil {
		return err
	}
	f.updated[appKey(uuid, name)] = res
	return nil
}

func (f *fakeRuntime) CheckpointPod(_ context.Context, uuid string, opts stage0.CheckpointOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range opts.Apps {
		if err := f.runningApp(uuid, name); err != nil {
			return err
		}
	}
	f.record("CheckpointPod %s %s %s", uuid, opts.Dir, strings.Join(opts.Apps, ","))
	return nil
}

func (f *fakeRuntime) CheckpointApp(ctx context.Context, uuid, app string, a stage0.ContainerArchive) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err // stage0 starts no dump past the deadline
	}
	if err := f.runningApp(uuid, app); err != nil {
		return err
	}
	f.record("CheckpointApp %s %s %s %s %s", uuid, app, a.Path, a.Dump.Name, a.Annotations["io.kubernetes.cri.sandbox-name"])
	return nil
}

// OpenContainerArchive reads the checkpoint in the directory the test
// gave for archive (f.archives).
func (f *fakeRuntime) OpenContainerArchive(uuid, archive string) (*stage0.ContainerCheckpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.pods[uuid]; !ok {
		return nil, stage0.ErrPodNotFound
	}
	dir, ok := f.archives[archive]
	if !ok {
		return nil, fmt.Errorf("no archive %s: %w", archive, stage0.ErrInvalid)
	}
	f.record("OpenContainerArchive %s %s", uuid, archive)
	return stage0.ReadContainerCheckpoint(dir)
}

func (f *fakeRuntime) Criu(context.Context) (string, string, error) {
	return "/usr/sbin/criu", "4.1.1", f.criuErr
}

func (f *fakeRuntime) ReopenAppLog(_ context.Context, uuid, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ReopenAppLog %s/%s", uuid, name)
	return f.runningApp(uuid, name)
}

func (f *fakeRuntime) Exec(ctx context.Context, uuid string, opts stage0.ExecOptions) (int, error) {
	f.mu.Lock()
	err := f.runningApp(uuid, opts.App)
	run := f.exec
	f.mu.Unlock()
	if err != nil {
		return -1, err
	}
	if run == nil {
		return 0, nil
	}
	return run(ctx, opts)
}

func (f *fakeRuntime) Attach(_ context.Context, uuid string, opts stage0.AttachOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Attach %s/%s", uuid, opts.App)
	return f.runningApp(uuid, opts.App)
}

// DialPod returns one end of a pipe whose other end echoes.
func (f *fakeRuntime) DialPod(_ context.Context, uuid, network, address string) (net.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("DialPod %s %s %s", uuid, network, address)
	if _, err := f.runningPod(uuid); err != nil {
		return nil, err
	}
	a, b := net.Pipe()
	go func() { io.Copy(b, b); b.Close() }()
	return a, nil
}

func (f *fakeRuntime) AppStats(_ context.Context, uuid, name string) (*stage0.AppStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.runningApp(uuid, name); err != nil {
		return nil, err
	}
	if s, ok := f.stats[appKey(uuid, name)]; ok {
		if f.sharedStats {
			return s, nil
		}
		c := *s
		return &c, nil
	}
	return &stage0.AppStats{Timestamp: time.Now()}, nil
}

func (f *fakeRuntime) PodStats(_ context.Context, uuid string) (*stage0.AppStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.runningPod(uuid); err != nil {
		return nil, err
	}
	if s, ok := f.stats[uuid]; ok {
		if f.sharedStats {
			return s, nil
		}
		c := *s
		return &c, nil
	}
	return &stage0.AppStats{Timestamp: time.Now()}, nil
}

func (f *fakeRuntime) ImagesInUse() (map[string]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	for _, o := range f.appOpts {
		out[o.Image] = true
	}
	return out, nil
}

func (f *fakeRuntime) NetworkReady() (bool, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.netReady, f.netWhy
}

func (f *fakeRuntime) PodNetwork() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.podNet, nil
}

func (f *fakeRuntime) SetPodCIDR(cidr string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, _, err := net.ParseCIDR(cidr); err != nil {
		return err
	}
	f.cidr = cidr
	return nil
}

func (f *fakeRuntime) Config() stage0.Config { return f.cfg }

// fakeStore is an in-memory imageStore: images by ID and normalized name.
type fakeStore struct {
	mu     sync.Mutex
	images []*store.Image
	remote map[string]*store.Image // what Pull finds, by normalized name
	pulls  []store.PullOptions
	layers map[string][]string // LayerPaths by image ID
	usage  store.Usage
	sweeps int
	holds  int // Holds not closed
	// LayerPaths calls made without, and with, a Hold
	unheldReads, heldReads int
	// pullAlloc is what a Pull allocates on the heap (a download's
	// buffers), kept in pulled
	pullAlloc int
	pulled    []byte
}

func newFakeStore() *fakeStore {
	return &fakeStore{remote: map[string]*store.Image{}, layers: map[string][]string{}}
}

// normalized returns the store's name for ref ("" if it is none).
func normalized(ref string) string {
	r, err := store.ParseReference(ref)
	if err != nil {
		return ""
	}
	return r.String()
}

func (s *fakeStore) find(ref string) (int, error) {
	name := normalized(ref)
	for i, img := range s.images {
		if img.ID == ref || img.ID == "sha256:"+ref {
			return i, nil
		}
		for _, n := range img.Names {
			if n == name {
				return i, nil
			}
		}
	}
	return -1, fmt.Errorf("image %q: %w", ref, store.ErrImageNotFound)
}

func (s *fakeStore) ResolveImage(ref string) (*store.Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, err := s.find(ref)
	if err != nil {
		return nil, err
	}
	return s.images[i], nil
}

func (s *fakeStore) ListImages() ([]*store.Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*store.Image{}, s.images...), nil
}

// Pull stores the remote image named ref under that name.
func (s *fakeStore) Pull(ctx context.Context, ref string, opts store.PullOptions) (*store.Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pulls = append(s.pulls, opts)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.pullAlloc > 0 {
		s.pulled = make([]byte, s.pullAlloc)
	}
	name := normalized(ref)
	img, ok := s.remote[name]
	if !ok {
		return nil, fmt.Errorf("image %q on its registry: %w", ref, store.ErrImageNotFound)
	}
	if i, err := s.find(img.ID); err == nil {
		s.images = append(s.images[:i], s.images[i+1:]...)
	}
	s.images = append(s.images, img)
	return img, nil
}

func (s *fakeStore) RemoveImage(ref string, opts store.RemoveOptions) (*store.Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, err := s.find(ref)
	if err != nil {
		return nil, err
	}
	img := s.images[i]
	if opts.InUse[img.ID] && !opts.Force {
		return nil, fmt.Errorf("image %s: %w", img.ID, store.ErrImageInUse)
	}
	s.images = append(s.images[:i], s.images[i+1:]...)
	return img, nil
}

func (s *fakeStore) Usage() (*store.Usage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.usage
	return &u, nil
}

func (s *fakeStore) LayerPaths(_ context.Context, img *store.Image) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holds > 0 {
		s.heldReads++
	} else {
		s.unheldReads++
	}
	return s.layers[img.ID], nil
}

// Hold counts the holds open until each is closed.
func (s *fakeStore) Hold(context.Context) (io.Closer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holds++
	return &fakeHold{s: s}, nil
}

type fakeHold struct {
	s    *fakeStore
	once sync.Once
}

func (h *fakeHold) Close() error {
	h.once.Do(func() {
		h.s.mu.Lock()
		h.s.holds--
		h.s.mu.Unlock()
	})
	return nil
}

func (s *fakeStore) SweepUnreferenced(context.Context) (*store.GCResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweeps++
	return &store.GCResult{}, nil
}

// testImage returns an image with an ID derived from name.
func testImage(name string) *store.Image {
	id := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(name)))
	return &store.Image{ID: id, Names: []string{normalized(name)}, Size: 1234,
		RepoDigests: []string{strings.Split(normalized(name), ":")[0] + "@sha256:" + strings.Repeat("ab", 32)}}
}

// testEnv is a service on fakes with a gRPC client through the service's
// own interceptor (error mapping, panics), over a unix socket.
type testEnv struct {
	svc   *criService
	rt    *fakeRuntime
	store *fakeStore
	rs    runtimeapi.RuntimeServiceClient
	is    runtimeapi.ImageServiceClient
	conn  *grpc.ClientConn
	ctx   context.Context
}

func newTestEnv(t testing.TB) *testEnv {
	t.Helper()
	rt, st := newFakeRuntime(), newFakeStore()
	cfg := Config{DataDir: rt.cfg.DataDir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), CheckpointRestore: true}
	svc := newService(cfg, st, rt, nil)
	g := newGRPCServer(svc, &instrument{log: cfg.Logger}) // no peer credential check
	// A unix socket: each bufconn connection kept its 2 MB of buffers
	// after both ends closed, which the fuzz targets' thousands of
	// services a second ran out of memory on.
	dir, err := os.MkdirTemp("", "rkt-svc")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(l)
	conn, err := grpc.NewClient("unix://"+l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); g.Stop(); os.RemoveAll(dir) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &testEnv{svc: svc, rt: rt, store: st, ctx: ctx, conn: conn,
		rs: runtimeapi.NewRuntimeServiceClient(conn), is: runtimeapi.NewImageServiceClient(conn)}
}

// sandboxConfig is a minimal valid sandbox config.
func sandboxConfig(name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: name + "-uid"},
		Labels:       map[string]string{"app": name},
		Annotations:  map[string]string{"note": "x"},
		LogDirectory: "/var/log/pods/" + name,
	}
}

// containerConfig is a minimal valid container config of image.
func containerConfig(name, image string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: image},
		Labels:   map[string]string{"ctr": name},
		LogPath:  name + "/0.log",
	}
}

// withStream gives the service a streaming server on a loopback port, as
// Serve does, closed when the test ends; it returns it.
func (e *testEnv) withStream(t testing.TB) *lazyStream {
	t.Helper()
	st, err := newLazyStream("127.0.0.1:0", &streamRuntime{svc: e.svc}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.close)
	e.svc.stream = st
	return st
}

// runPod runs a sandbox and returns its ID.
func (e *testEnv) runPod(t testing.TB, name string) string {
	t.Helper()
	r, err := e.rs.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig(name)})
	if err != nil {
		t.Fatalf("RunPodSandbox(%s): %v", name, err)
	}
	return r.GetPodSandboxId()
}

// createContainer creates a container of busybox (stored first) in pod.
func (e *testEnv) createContainer(t testing.TB, pod, name string) string {
	t.Helper()
	e.haveImage("busybox")
	r, err := e.rs.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: pod, Config: containerConfig(name, "busybox"), SandboxConfig: sandboxConfig("p"),
	})
	if err != nil {
		t.Fatalf("CreateContainer(%s): %v", name, err)
	}
	return r.GetContainerId()
}

// startContainer creates and starts a container.
func (e *testEnv) startContainer(t testing.TB, pod, name string) string {
	t.Helper()
	id := e.createContainer(t, pod, name)
	if _, err := e.rs.StartContainer(e.ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatalf("StartContainer(%s): %v", name, err)
	}
	return id
}

// haveImage stores an image named name (once) and returns it.
func (e *testEnv) haveImage(name string) *store.Image {
	if img, err := e.store.ResolveImage(name); err == nil {
		return img
	}
	img := testImage(name)
	e.store.mu.Lock()
	e.store.images = append(e.store.images, img)
	e.store.mu.Unlock()
	return img
}

// wantCode fails unless err is a gRPC status with code.
func wantCode(t *testing.T, what string, err error, code codes.Code) {
	t.Helper()
	if got := status.Code(err); got != code {
		t.Fatalf("%s: code %v (%v), want %v", what, got, err, code)
	}
}

// waitSubscribers waits until n GetContainerEvents streams listen.
func waitSubscribers(t *testing.T, c *criService, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); c.events.subscribers() != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d event subscribers, want %d", c.events.subscribers(), n)
		}
	}
}

// sameIDs reports whether got and want hold the same IDs in any order.
func sameIDs(got, want []string) bool {
	got, want = slices.Clone(got), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(want)
	return slices.Equal(got, want)
}

// breakConfig makes the CRI config of container id of pod undecodable.
func (e *testEnv) breakConfig(pod, id string) {
	e.rt.mu.Lock()
	defer e.rt.mu.Unlock()
	for i := range e.rt.pods[pod].Apps {
		a := &e.rt.pods[pod].Apps[i]
		if a.App.Annotations[annoContainerID] == id {
			a.App.Annotations = maps.Clone(a.App.Annotations)
			a.App.Annotations[annoConfig] = "{not a config"
		}
	}
}

// breakPod makes pod unreadable to the fake stage0 with err.
func (e *testEnv) breakPod(pod string, err error) {
	e.rt.mu.Lock()
	defer e.rt.mu.Unlock()
	if e.rt.unreadable == nil {
		e.rt.unreadable = map[string]error{}
	}
	e.rt.unreadable[pod] = err
}

// breakSandboxConfig makes the CRI config annotation of pod undecodable.
func (e *testEnv) breakSandboxConfig(pod string) {
	e.rt.mu.Lock()
	defer e.rt.mu.Unlock()
	p := e.rt.pods[pod]
	m := *p.Manifest
	m.Annotations = maps.Clone(m.Annotations)
	m.Annotations[annoConfig] = "{not a config"
	p.Manifest = &m
}
