package stage0

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/networking"
	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/lock"
	"github.com/rkt/rkt/pkg/schema"
)

// cleanupTimeout bounds the cleanup after a failed start.
const cleanupTimeout = 60 * time.Second

// prepareLocked creates a pod with its apps in prepare/ and returns it still
// locked. On error nothing is left behind.
func (r *Runtime) prepareLocked(ctx context.Context, opts PrepareOptions) (*pod, *lock.FileLock, error) {
	if len(opts.Apps) == 0 {
		return nil, nil, fmt.Errorf("a pod needs at least one app: %w", ErrInvalid)
	}
	p, l, _, err := r.createPod(opts.PodOptions)
	if err != nil {
		return nil, nil, err
	}
	for _, a := range opts.Apps {
		if _, _, err := r.addAppRecord(ctx, p, a); err != nil {
			removePodDir(p.dir)
			l.Close()
			return nil, nil, err
		}
	}
	return p, l, nil
}

func (r *Runtime) prepare(ctx context.Context, opts PrepareOptions) (string, error) {
	p, l, err := r.prepareToPrepared(ctx, opts)
	if err != nil {
		return "", err
	}
	l.Close()
	return p.uuid, nil
}

func (r *Runtime) run(ctx context.Context, opts PrepareOptions) (string, error) {
	p, l, err := r.prepareToPrepared(ctx, opts)
	if err != nil {
		return "", err
	}
	defer l.Close()
	return p.uuid, r.startPod(ctx, p, l, modeRun)
}

// prepareToPrepared writes the pod and moves it to prepared; it returns it
// locked.
func (r *Runtime) prepareToPrepared(ctx context.Context, opts PrepareOptions) (*pod, *lock.FileLock, error) {
	p, l, err := r.prepareLocked(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := r.move(p, dirPrepared); err != nil {
		removePodDir(p.dir)
		l.Close()
		return nil, nil, err
	}
	return p, l, nil
}

func (r *Runtime) runPrepared(ctx context.Context, uuid string, mode stage1Mode) error {
	p, err := r.findPod(uuid)
	if err != nil {
		return err
	}
	if p.state != dirPrepared {
		return fmt.Errorf("pod %s is not prepared (it is in %s): %w", p.uuid, p.state, ErrInvalidState)
	}
	l, err := lockIdle(ctx, p)
	if err != nil {
		return err
	}
	defer l.Close()
	if p, err = r.refind(p); err != nil || p.state != dirPrepared {
		return fmt.Errorf("pod %s was moved by someone else: %w", uuid, ErrInvalidState)
	}
	// A manifest this rkt cannot read (a newer rkt's) is refused while the
	// pod is still prepared: startPod would move it to run/ for good.
	if _, err := p.readManifest(); err != nil {
		return err
	}
	return r.startPod(ctx, p, l, mode)
}

func (r *Runtime) sandbox(ctx context.Context, opts PodOptions) (string, error) {
	p, l, _, err := r.createPod(opts)
	if err != nil {
		return "", err
	}
	defer l.Close()
	return p.uuid, r.startPod(ctx, p, l, modeSandbox)
}

// startPod moves a locked pod to run/, sets up its network, mounts and
// specs its apps and starts stage1, which inherits the lock, and marks the
// pod started. On failure the pod's resources are released and it stays in
// run/ as exited.
func (r *Runtime) startPod(ctx context.Context, p *pod, l *lock.FileLock, mode stage1Mode) error {
	if err := r.move(p, dirRun); err != nil {
		return err
	}
	sf, err := fileperm.OpenFile(p.layout().Starting(), os.O_RDONLY|os.O_CREATE, fileperm.Shared)
	if err != nil {
		return fmt.Errorf("cannot create the start lock of pod %s: %w", p.uuid, err)
	}
	sl := lock.FromFile(sf)
	defer sl.Close()
	if err := sl.TryExclusiveLock(); err != nil {
		return fmt.Errorf("cannot lock the start of pod %s: %w", p.uuid, err)
	}
	err = r.startMoved(ctx, p, l, mode)
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if cerr := r.cleanup(cctx, p); cerr != nil {
			return fmt.Errorf("%w (and releasing its resources failed: %v)", err, cerr)
		}
		return err
	}
	if err := fileperm.WriteFileVolatile(p.layout().Started(), nil, fileperm.Shared); err != nil {
		// the repair will take it for cut off and stop it (a full disk?)
		r.log.Error("cannot mark a pod started", "pod", p.uuid, "error", err)
	}
	return nil
}

func (r *Runtime) startMoved(ctx context.Context, p *pod, l *lock.FileLock, mode stage1Mode) error {
	t0 := time.Now()
	pm, err := p.readManifest()
	if err != nil {
		return err
	}
	if err := mountPodShm(p, pm); err != nil {
		return err
	}
	ps, err := networking.Begin(ctx, r.cfg.Net, networking.PodNet{
		UUID: p.uuid, Dir: p.dir, Net: pm.Net, Ports: pm.Ports, DNS: pm.DNS,
		CreateNetNS: r.userNSNetNS(ctx, p, pm),
	})
	if err != nil {
		return fmt.Errorf("cannot set up the network of pod %s: %w", p.uuid, err)
	}
	r.log.Debug("pod network namespace created", "pod", p.uuid, "after", time.Since(t0))
	if concurrentNetAdd(pm, mode) {
		return r.startAddingNet(ctx, p, pm, l, mode, ps, t0)
	}
	net, err := ps.Add(ctx)
	if err != nil {
		return fmt.Errorf("cannot set up the network of pod %s: %w", p.uuid, err)
	}
	r.log.Debug("pod network set up", "pod", p.uuid, "net", pm.Net, "after", time.Since(t0))
	if err := r.setupUserNS(ctx, p, pm); err != nil {
		return err
	}
	if err := writeEtcFiles(p, pm, net); err != nil {
		return err
	}
	_, err = r.startSupervisor(ctx, p, pm, l, mode, t0)
	return err
}

// concurrentNetAdd says whether the pod's CNI ADDs may run while its
// supervisor starts: a sandbox (its apps come later, after the etc files
// the ADDs' results fill) without a user namespace (created after the
// network) nor net sysctls (which may name the interfaces the ADDs create).
func concurrentNetAdd(pm *schema.PodManifest, mode stage1Mode) bool {
	if mode != modeSandbox || pm.UserNS != nil {
		return false
	}
	for k := range pm.Sysctls {
		if strings.HasPrefix(k, "net.") || strings.HasPrefix(k, "net/") {
			return false
		}
	}
	return true
}

// startAddingNet runs the CNI ADDs of ps while the supervisor starts, then
// writes the etc files; it stops the supervisor if the ADDs fail.
func (r *Runtime) startAddingNet(ctx context.Context, p *pod, pm *schema.PodManifest, l *lock.FileLock, mode stage1Mode, ps *networking.PendingSetup, t0 time.Time) error {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	type added struct {
		net *networking.Result
		err error
	}
	addc := make(chan added, 1)
	go func() {
		net, err := ps.Add(actx)
		addc <- added{net, err}
	}()
	s1, err := r.startSupervisor(ctx, p, pm, l, mode, t0)
	if err != nil {
		cancel()
		<-addc // a failed ADD rolled back; the caller's cleanup does the rest
		return err
	}
	a := <-addc
	if a.err != nil {
		s1.stop()
		return fmt.Errorf("cannot set up the network of pod %s: %w", p.uuid, a.err)
	}
	r.log.Debug("pod network set up", "pod", p.uuid, "net", pm.Net, "after", time.Since(t0))
	if err := writeEtcFiles(p, pm, a.net); err != nil {
		s1.stop()
		return err
	}
	return nil
}

// startSupervisor applies the pod's resources, specifies its apps and starts
// stage1.
func (r *Runtime) startSupervisor(ctx context.Context, p *pod, pm *schema.PodManifest, l *lock.FileLock, mode stage1Mode, t0 time.Time) (*stage1Proc, error) {
	if err := r.applyPodResources(pm); err != nil {
		return nil, err
	}
	for _, a := range pm.Apps {
		if err := r.materializeApp(p, pm, a.Name); err != nil {
			return nil, err
		}
	}
	for _, f := range []string{p.layout().Cleaned(), p.layout().Stage1Died(), p.layout().Stage1Clean()} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	r.log.Debug("pod apps mounted and specified", "pod", p.uuid, "apps", len(pm.Apps), "after", time.Since(t0))
	s1, err := r.startStage1(ctx, p, pm, l, mode)
	if err != nil {
		return nil, err
	}
	r.log.Debug("stage1 ready", "pod", p.uuid, "after", time.Since(t0))
	return s1, nil
}

// mountPodShm mounts the pod's /dev/shm, which its apps bind (a tmpfs of
// 64 MiB, as containerd's and CRI-O's). The pod's cleanup unmounts it with
// everything under the pod directory.
func mountPodShm(p *pod, pm *schema.PodManifest) error {
	if !pm.SharedShm {
		return nil
	}
	// the root of a user-namespaced pod binds it from inside the namespace
	if err := allowUserNS(pm, p.layout().ShmDir()); err != nil {
		return fmt.Errorf("cannot open the /dev/shm of pod %s to its user namespace: %w", p.uuid, err)
	}
	if err := unix.Mount("shm", p.layout().Shm(), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=65536k"); err != nil {
		return fmt.Errorf("cannot mount the /dev/shm of pod %s: %w", p.uuid, err)
	}
	return nil
}
