package stage0

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

// defaultStopTimeout is the grace period when none is given.
const defaultStopTimeout = 10 * time.Second

// runningPod finds a pod and checks that its supervisor runs.
func (r *Runtime) runningPod(uuid string) (*pod, error) {
	p, st, err := r.findPodState(uuid)
	if err != nil {
		return nil, err
	}
	if st != PodRunning {
		return nil, fmt.Errorf("pod %s is %s: %w", p.uuid, st, ErrNotRunning)
	}
	return p, nil
}

// onSupervisor runs call with a client of the supervisor of the running
// pod uuid and the name of the app (app, or the pod's only one when
// empty). A named app of a pod given by its full UUID is the supervisor's
// to check, in run/, without reading the pod's state or manifest: its
// answer proves the pod runs and it knows its apps. Only when nothing
// answers there is the pod looked up, for the precise error (no such pod,
// a pod not running). Errors are stage0's (appErr).
func (r *Runtime) onSupervisor(uuid, app string, call func(c *control.Client, app string) error) error {
	if app != "" && schema.IsUUID(uuid) {
		err := call(control.NewClient(r.podAt(dirRun, uuid).dir), app)
		if errors.Is(err, control.ErrNoSupervisor) {
			if _, perr := r.runningPod(uuid); perr != nil {
				return perr
			}
		}
		return appErr(err)
	}
	p, err := r.runningPod(uuid)
	if err != nil {
		return err
	}
	if app, err = findApp(p, app); err != nil {
		return err
	}
	return appErr(call(control.NewClient(p.dir), app))
}

// appErr maps control errors to stage0's.
func appErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, control.ErrAppNotFound):
		return fmt.Errorf("%w: %w", ErrAppNotFound, err)
	case errors.Is(err, control.ErrInvalid):
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	case errors.Is(err, control.ErrNoSupervisor), errors.Is(err, control.ErrAppNotRunning):
		return fmt.Errorf("%w: %w", ErrNotRunning, err)
	case errors.Is(err, control.ErrAppRunning):
		return fmt.Errorf("%w: %w", ErrInvalidState, err)
	}
	return err
}

func (r *Runtime) addApp(ctx context.Context, uuid string, opts AppOptions) (string, error) {
	p, err := r.runningPod(uuid)
	if err != nil {
		return "", err
	}
	ml, err := r.lockManifest(ctx, p)
	if err != nil {
		return "", err
	}
	defer ml.Close()
	na, err := r.newAppRecord(ctx, p, opts)
	if err != nil {
		return "", err
	}
	defer na.release() // the rootfs is mounted and the app listed by then
	name := na.app.Name
	// The rootfs and spec come first, so that the supervisor creates the
	// container (Prestart) while the record and the pod manifest are
	// written and synced (commit). The supervisor's answer is read after.
	if err := r.materializeRecord(p, na.pm, name, &na.rec); err != nil {
		r.removeAppDir(p, name)
		return "", err
	}
	if opts.RestoreFrom != nil {
		if err := r.prepareRestore(ctx, p, name, opts.RestoreFrom); err != nil {
			r.removeAppDir(p, name)
			return "", err
		}
	}
	var pre *prestart
	if opts.Prestart && opts.RestoreFrom == nil {
		pre = r.sendPrestart(ctx, p, &na.app)
	}
	err = na.commit(p, false)
	if pre != nil {
		r.settlePrestart(ctx, p, name, pre, err == nil)
	}
	if err != nil {
		r.removeAppDir(p, name)
		return "", err
	}
	return name, nil
}

// prestartTimeout bounds the exchanges about a prestart, whatever the
// caller's context: the supervisor answers at once (it creates the
// container in the background), and only its answer tells whether there is
// a container to drop when the app is not added.
const prestartTimeout = 30 * time.Second

// prestart is a prestart request sent, its answer still to be read.
type prestart struct {
	*control.Pending
	cancel context.CancelFunc
}

// settlePrestart reads the supervisor's answer to a prestart and, if the
// app was not added (!committed), has it drop the container it prestarted.
func (r *Runtime) settlePrestart(ctx context.Context, p *pod, name string, pre *prestart, committed bool) {
	if !r.prestarted(p, name, pre) || committed {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), prestartTimeout)
	defer cancel()
	if err := control.NewClient(p.dir).RemoveApp(ctx, name); err != nil {
		r.log.Warn("cannot drop the prestarted container of an app not added", "pod", p.uuid, "app", name, "error", err)
	}
}

// sendPrestart asks the supervisor to create the app's container now; nil
// if the request could not be sent (logged: StartApp creates the container
// then). Its answer is read even if ctx ends meanwhile.
func (r *Runtime) sendPrestart(ctx context.Context, p *pod, app *schema.App) *prestart {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), prestartTimeout)
	pre, err := control.NewClient(p.dir).SendPrestartApp(ctx, app)
	if err != nil {
		cancel()
		r.log.Debug("cannot prestart the app", "pod", p.uuid, "app", app.Name, "error", err)
		return nil
	}
	return &prestart{Pending: pre, cancel: cancel}
}

// prestarted reads the supervisor's answer to a prestart request and
// reports whether it took it (a refusal is only logged, as in sendPrestart).
func (r *Runtime) prestarted(p *pod, app string, pre *prestart) bool {
	defer pre.cancel()
	if err := pre.Wait(); err != nil {
		r.log.Debug("cannot prestart the app", "pod", p.uuid, "app", app, "error", err)
		return false
	}
	return true
}

// findApp resolves an app name; empty means the pod's only app.
func findApp(p *pod, name string) (string, error) {
	pm, err := p.readManifest()
	if err != nil {
		return "", err
	}
	return appOf(p, pm, name)
}

// appOf resolves an app name in the manifest pm; empty means its only app.
func appOf(p *pod, pm *schema.PodManifest, name string) (string, error) {
	if name == "" {
		if len(pm.Apps) != 1 {
			return "", fmt.Errorf("pod %s has %d apps: name one: %w", p.uuid, len(pm.Apps), ErrInvalid)
		}
		return pm.Apps[0].Name, nil
	}
	if appIndex(pm, name) < 0 {
		return "", fmt.Errorf("app %q in pod %s: %w", name, p.uuid, ErrAppNotFound)
	}
	return name, nil
}

func (r *Runtime) startApp(ctx context.Context, uuid, app string) error {
	p, err := r.runningPod(uuid)
	if err != nil {
		return err
	}
	if app, err = findApp(p, app); err != nil {
		return err
	}
	return appErr(control.NewClient(p.dir).StartApp(ctx, app))
}

func (r *Runtime) stopApp(ctx context.Context, uuid, app string, opts StopOptions) error {
	p, err := r.findPod(uuid)
	if err != nil {
		return err
	}
	if app, err = findApp(p, app); err != nil {
		return err
	}
	st, err := p.podState()
	if err != nil {
		return err
	}
	if st != PodRunning {
		return nil // nothing runs in a pod without a supervisor
	}
	timeout := opts.Timeout
	if opts.Force {
		timeout = 0
	} else if timeout <= 0 {
		timeout = defaultStopTimeout
	}
	err = control.NewClient(p.dir).StopApp(ctx, app, timeout)
	if errors.Is(err, control.ErrAppNotFound) || errors.Is(err, control.ErrNoSupervisor) {
		return nil // never started, or gone with its supervisor
	}
	return appErr(err)
}

// removeApp stops the app if it runs, makes the supervisor forget it,
// and drops it from the pod (dropApp), the manifest read once, under its
// lock.
func (r *Runtime) removeApp(ctx context.Context, uuid, app string) error {
	p, err := r.findPod(uuid)
	if err != nil {
		return err
	}
	ml, err := r.lockManifest(ctx, p)
	if err != nil {
		return err
	}
	pm, err := p.lockedManifest()
	if err == nil {
		app, err = appOf(p, pm, app)
	}
	if err != nil {
		ml.Close()
		return err
	}
	if st, err := p.podState(); err == nil && st == PodRunning {
		if err := removeFromSupervisor(ctx, control.NewClient(p.dir), app); err != nil {
			ml.Close()
			return err
		}
	}
	return r.dropApp(p, pm, app, func() { ml.Close() })
}

// removeFromSupervisor makes the supervisor forget the app, stopping it
// first if it runs: an exited app (what a kubelet removes) takes one call.
func removeFromSupervisor(ctx context.Context, c *control.Client, app string) error {
	err := c.RemoveApp(ctx, app)
	if errors.Is(err, control.ErrAppRunning) {
		if err = c.StopApp(ctx, app, defaultStopTimeout); err == nil || errors.Is(err, control.ErrAppNotFound) {
			err = c.RemoveApp(ctx, app)
		}
	}
	// a supervisor gone meanwhile took its apps with it
	if err != nil && !errors.Is(err, control.ErrAppNotFound) && !errors.Is(err, control.ErrNoSupervisor) {
		return appErr(err)
	}
	return nil
}

func (r *Runtime) manifest(uuid string) (*schema.PodManifest, error) {
	p, err := r.findPod(uuid)
	if err != nil {
		return nil, err
	}
	return p.readManifest()
}

func (r *Runtime) appSpec(uuid, app string) (*specs.Spec, error) {
	if r.view != nil {
		// a pod the view knows: where it is, and whether its spec is
		// the one kept, the view says
		if full, err := r.view.resolve(uuid); err == nil && full != "" {
			return r.view.appSpec(full, app, func() (*specs.Spec, fileID, error) {
				p, err := r.findPod(full)
				if err != nil {
					return nil, fileID{}, err
				}
				return readAppSpec(p, app)
			})
		}
	}
	p, err := r.findPod(uuid)
	if err != nil {
		return nil, err
	}
	s, _, err := readAppSpec(p, app)
	return s, err
}

// readAppSpec reads the runtime spec of an app from its directory, and
// the identity of the file it read.
func readAppSpec(p *pod, app string) (*specs.Spec, fileID, error) {
	app, err := findApp(p, app)
	if err != nil {
		return nil, fileID{}, err
	}
	f, err := os.Open(p.appDir(app).Spec())
	if err != nil {
		return nil, fileID{}, fmt.Errorf("cannot read the runtime spec of app %q: %w", app, err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fileID{}, fmt.Errorf("cannot read the runtime spec of app %q: %w", app, err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fileID{}, fmt.Errorf("cannot read the runtime spec of app %q: %w", app, err)
	}
	var s specs.Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fileID{}, fmt.Errorf("cannot parse the runtime spec of app %q: %w", app, err)
	}
	return &s, fileIDOf(&st), nil
}
