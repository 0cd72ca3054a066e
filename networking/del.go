package networking

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
)

// goneMarks are the phrases of plugin errors saying that what a DEL
// removes is already gone: iptables (nf_tables and legacy) on a chain or
// rule someone flushed, netlink on a vanished link, a namespace or file
// already removed.
var goneMarks = []string{
	"does not exist",
	"no chain/target/match by that name",
	"couldn't load target",
	"bad rule (does a matching rule exist",
	"link not found",
	"no such file or directory",
	"no such device",
}

// alreadyGone reports whether a plugin's error says that what it was to
// remove does not exist (CNI error code 3, or one of goneMarks).
func alreadyGone(err error) bool {
	var ce *cnitypes.Error
	if errors.As(err, &ce) && ce.Code == cnitypes.ErrUnknownContainer {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, m := range goneMarks {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// delExec runs CNI plugins; a DEL that fails only because what it removes
// is already gone counts as done, as the CNI spec asks of DEL (some plugins
// fail instead: bridge when its NAT chain was flushed). The plugins after
// it still run; the caller sweeps what the failed one may have left.
type delExec struct {
	boundedExec

	mu   sync.Mutex
	gone []error
}

func (e *delExec) ExecPlugin(ctx context.Context, pluginPath string, stdin []byte, environ []string) ([]byte, error) {
	out, err := e.boundedExec.ExecPlugin(ctx, pluginPath, stdin, environ)
	if err != nil && ctx.Err() == nil && isDel(environ) && alreadyGone(err) {
		e.mu.Lock()
		e.gone = append(e.gone, err)
		e.mu.Unlock()
		return nil, nil
	}
	return out, err
}

// tolerated reports whether some DEL failed on something already gone.
func (e *delExec) tolerated() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.gone) > 0
}

func isDel(environ []string) bool {
	for _, kv := range environ {
		if kv == "CNI_COMMAND=DEL" {
			return true
		}
	}
	return false
}

// newDelCNI is newCNI for DELs, with the delExec it runs plugins with.
func newDelCNI(cfg Config) (*libcni.CNIConfig, *delExec) {
	return newDelCNIAt(cfg, cfg.cacheDir())
}

// newDelCNIAt is newDelCNI with libcni's cache of results at cacheDir.
func newDelCNIAt(cfg Config, cacheDir string) (*libcni.CNIConfig, *delExec) {
	e := &delExec{boundedExec: newBoundedExec()}
	return libcni.NewCNIConfigWithCacheDir(cfg.pluginDirs(), cacheDir, e), e
}
