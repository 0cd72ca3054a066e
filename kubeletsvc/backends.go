package kubeletsvc

import (
	"context"
	"io"
	"net"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/store"
)

// podRuntime is what the CRI handlers use of stage0: a *stage0.Runtime in
// the service, a fake in the unit tests (so that every RPC is tested
// without root). Errors match stage0's sentinels.
type podRuntime interface {
	// pods
	Sandbox(ctx context.Context, opts stage0.PodOptions) (string, error)
	Stop(ctx context.Context, uuid string, opts stage0.StopOptions) error
	Remove(ctx context.Context, uuid string, force bool) error
	List(ctx context.Context) ([]*stage0.PodStatus, error)
	// ListGen is List with the generation it is the answer of; while
	// Generation returns the same, List answers the same (0: unknown).
	ListGen(ctx context.Context) ([]*stage0.PodStatus, uint64, error)
	Generation() uint64
	Status(ctx context.Context, uuid string) (*stage0.PodStatus, error)
	GC(ctx context.Context, opts stage0.GCOptions) (*stage0.GCResult, error)

	// apps
	AddApp(ctx context.Context, uuid string, opts stage0.AppOptions) (string, error)
	StartApp(ctx context.Context, uuid, app string) error
	StopApp(ctx context.Context, uuid, app string, opts stage0.StopOptions) error
	RemoveApp(ctx context.Context, uuid, app string) error
	AppSpec(uuid, app string) (*specs.Spec, error)
	UpdateAppResources(ctx context.Context, uuid, app string, res *specs.LinuxResources) error
	ReopenAppLog(ctx context.Context, uuid, app string) error
	CheckpointPod(ctx context.Context, uuid string, opts stage0.CheckpointOptions) error
	CheckpointApp(ctx context.Context, uuid, app string, a stage0.ContainerArchive) error
	OpenContainerArchive(uuid, archive string) (*stage0.ContainerCheckpoint, error)
	Criu(ctx context.Context) (path, version string, err error)

	// I/O
	Exec(ctx context.Context, uuid string, opts stage0.ExecOptions) (int, error)
	Attach(ctx context.Context, uuid string, opts stage0.AttachOptions) error
	DialPod(ctx context.Context, uuid, network, address string) (net.Conn, error)

	// statistics and images
	AppStats(ctx context.Context, uuid, app string) (*stage0.AppStats, error)
	PodStats(ctx context.Context, uuid string) (*stage0.AppStats, error)
	ImagesInUse() (map[string]bool, error)

	// network and configuration
	NetworkReady() (bool, string)
	PodNetwork() (string, error)
	SetPodCIDR(cidr string) error
	Config() stage0.Config
}

// imageStore is what the CRI handlers use of the store: a *store.Store in
// the service, a fake in the unit tests. Errors match the store's
// sentinels.
type imageStore interface {
	ResolveImage(ref string) (*store.Image, error)
	ListImages() ([]*store.Image, error)
	Pull(ctx context.Context, ref string, opts store.PullOptions) (*store.Image, error)
	RemoveImage(ref string, opts store.RemoveOptions) (*store.Image, error)
	Usage() (*store.Usage, error)
	LayerPaths(ctx context.Context, img *store.Image) ([]string, error)
	Hold(ctx context.Context) (io.Closer, error)
	SweepUnreferenced(ctx context.Context) (*store.GCResult, error)
}

var (
	_ podRuntime = (*stage0.Runtime)(nil)
	_ imageStore = (*store.Store)(nil)
)
