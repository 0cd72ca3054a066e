package stage0

import (
	"context"
	"errors"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/schema"
)

// errTODO marks parts of the API that are being implemented; this file
// shrinks as they land.
var errTODO = errors.New("stage0: not implemented yet")

type stage1Mode string

const (
	modeRun     stage1Mode = "run"
	modeSandbox stage1Mode = "sandbox"
)

func (r *Runtime) prepare(ctx context.Context, opts PrepareOptions) (string, error) {
	return "", errTODO
}
func (r *Runtime) runPrepared(ctx context.Context, uuid string, mode stage1Mode) error {
	return errTODO
}
func (r *Runtime) run(ctx context.Context, opts PrepareOptions) (string, error) { return "", errTODO }
func (r *Runtime) sandbox(ctx context.Context, opts PodOptions) (string, error) { return "", errTODO }
func (r *Runtime) addApp(ctx context.Context, uuid string, opts AppOptions) (string, error) {
	return "", errTODO
}
func (r *Runtime) startApp(ctx context.Context, uuid, app string) error { return errTODO }
func (r *Runtime) stopApp(ctx context.Context, uuid, app string, opts StopOptions) error {
	return errTODO
}
func (r *Runtime) removeApp(ctx context.Context, uuid, app string) error         { return errTODO }
func (r *Runtime) stop(ctx context.Context, uuid string, opts StopOptions) error { return errTODO }
func (r *Runtime) remove(ctx context.Context, uuid string, force bool) error     { return errTODO }
func (r *Runtime) gc(ctx context.Context, opts GCOptions) (*GCResult, error)     { return nil, errTODO }
func (r *Runtime) list(ctx context.Context) ([]*PodStatus, error)                { return nil, errTODO }
func (r *Runtime) status(ctx context.Context, uuid string) (*PodStatus, error)   { return nil, errTODO }
func (r *Runtime) wait(ctx context.Context, uuid string) (*PodStatus, error)     { return nil, errTODO }
func (r *Runtime) manifest(uuid string) (*schema.PodManifest, error)             { return nil, errTODO }
func (r *Runtime) appSpec(uuid, app string) (*specs.Spec, error)                 { return nil, errTODO }
func (r *Runtime) exec(ctx context.Context, uuid string, opts ExecOptions) (int, error) {
	return 0, errTODO
}
func (r *Runtime) attach(ctx context.Context, uuid string, opts AttachOptions) error { return errTODO }
func (r *Runtime) updateAppResources(ctx context.Context, uuid, app string, res *specs.LinuxResources) error {
	return errTODO
}
func (r *Runtime) appStats(ctx context.Context, uuid, app string) (*AppStats, error) {
	return nil, errTODO
}
func (r *Runtime) podStats(ctx context.Context, uuid string) (*AppStats, error) { return nil, errTODO }
func (r *Runtime) reopenAppLog(ctx context.Context, uuid, app string) error     { return errTODO }
