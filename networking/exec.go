package networking

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/version"
)

// pluginTimeout bounds each run of a CNI plugin, as long as the kubelet
// waits for a runtime call: a plugin that hangs (waiting for a daemon that
// is gone, say) is killed and its ADD or DEL fails, so that a caller
// without a deadline (the service's repair, rkt gc and rm) goes on and
// retries later. A variable for the tests.
var pluginTimeout = 2 * time.Minute

// boundedExec runs CNI plugins as libcni's default executor does, each
// for at most pluginTimeout.
type boundedExec struct {
	invoke.RawExec
	version.PluginDecoder
}

func newBoundedExec() boundedExec {
	return boundedExec{RawExec: invoke.RawExec{Stderr: os.Stderr}}
}

func (e *boundedExec) ExecPlugin(ctx context.Context, pluginPath string, stdin []byte, environ []string) ([]byte, error) {
	pctx, cancel := context.WithTimeout(ctx, pluginTimeout)
	defer cancel()
	out, err := e.RawExec.ExecPlugin(pctx, pluginPath, stdin, environ)
	if err != nil && ctx.Err() == nil && pctx.Err() != nil {
		return nil, fmt.Errorf("CNI plugin %s was killed after %v: %w", pluginPath, pluginTimeout, err)
	}
	return out, err
}
