package kubeletsvc

import (
	"context"
	"log/slog"
	"sync"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"

	"github.com/rkt/rkt/kubeletsvc/internal/registrar"
)

// criService implements the CRI RuntimeService and ImageService.
type criService struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	cfg    Config
	log    *slog.Logger
	stream streaming.Server // set by Server.Serve before serving

	sandboxNames   *registrar.Registrar // name_namespace_uid_attempt -> pod UUID
	containerNames *registrar.Registrar // name_sandbox_attempt -> container ID
	events         *eventBus

	mu      sync.Mutex
	podCIDR string // from UpdateRuntimeConfig
}

func newCRIService(cfg Config) (*criService, error) {
	return &criService{
		cfg:            cfg,
		log:            cfg.Logger,
		sandboxNames:   registrar.New(),
		containerNames: registrar.New(),
		events:         newEventBus(),
	}, nil
}

// startBackground starts the service's background work (none needs to
// outlive ctx).
func (c *criService) startBackground(ctx context.Context) {}
