package networking

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/containernetworking/cni/pkg/invoke"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
)

// pluginTimeout bounds each run of a CNI plugin, as long as the kubelet
// waits for a runtime call: a plugin that hangs (waiting for a daemon that
// is gone, say) is killed and its ADD or DEL fails, so that a caller
// without a deadline (the service's repair, rkt gc and rm) goes on and
// retries later. A variable for the tests.
var pluginTimeout = 2 * time.Minute

// pluginWaitDelay is how long a plugin's output is read after it exited
// (or was killed) while something it started still holds its stdout or
// stderr open: then the pipes are closed and the run ends.
var pluginWaitDelay = 5 * time.Second

// boundedExec runs CNI plugins as libcni's default executor
// (invoke.RawExec) does, but bounded: each run lasts at most
// pluginTimeout, after which the plugin's process group is killed, and a
// child left holding the plugin's output pipes cannot keep the run going
// (libcni's executor waits for it forever).
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
	var stdout, stderr bytes.Buffer
	var err error
	// A plugin binary being written ("text file busy") is retried, as
	// libcni does.
	for try := 0; try <= 5; try++ {
		stdout.Reset()
		stderr.Reset()
		if err = runPlugin(pctx, pluginPath, stdin, environ, &stdout, &stderr); err == nil || !errors.Is(err, syscall.ETXTBSY) {
			break
		}
		select {
		case <-pctx.Done():
		case <-time.After(time.Second):
		}
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		// The plugin itself succeeded; a child of it kept the pipes open.
		fmt.Fprintf(e.stderr(), "CNI plugin %s left a process holding its output open\n", pluginPath)
		err = nil
	}
	if err != nil {
		if ctx.Err() == nil && pctx.Err() != nil {
			return nil, fmt.Errorf("CNI plugin %s was killed after %v: %w", pluginPath, pluginTimeout, err)
		}
		return nil, pluginError(err, stdout.Bytes(), stderr.Bytes())
	}
	if stderr.Len() > 0 {
		_, _ = stderr.WriteTo(e.stderr())
	}
	return stdout.Bytes(), nil
}

func (e *boundedExec) stderr() io.Writer {
	if e.RawExec.Stderr != nil {
		return e.RawExec.Stderr
	}
	return io.Discard
}

// runPlugin runs one plugin in its own process group, which is killed
// whole when ctx ends.
func runPlugin(ctx context.Context, pluginPath string, stdin []byte, environ []string, stdout, stderr *bytes.Buffer) error {
	c := exec.CommandContext(ctx, pluginPath)
	c.Env = environ
	c.Stdin = bytes.NewReader(stdin)
	c.Stdout, c.Stderr = stdout, stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = pluginWaitDelay
	return c.Run()
}

// pluginError is the error a failed plugin reported on stdout (a CNI
// error object), as libcni makes it, or one made from its stderr.
func pluginError(err error, stdout, stderr []byte) error {
	ce := &cnitypes.Error{}
	switch {
	case len(stdout) > 0:
		if perr := json.Unmarshal(stdout, ce); perr != nil {
			ce.Msg = fmt.Sprintf("netplugin failed but error parsing its diagnostic message %q: %v", stdout, perr)
		}
	case len(stderr) > 0:
		ce.Msg = fmt.Sprintf("netplugin failed: %q: %v", strings.TrimSpace(string(stderr)), err)
	default:
		ce.Msg = fmt.Sprintf("netplugin failed with no error message: %v", err)
	}
	return ce
}
