package stage0

import (
	"context"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/schema"
)

// This file is stage0's public API. Pods are named by UUID; every method
// that takes a UUID accepts a unique prefix of it.

// Prepare writes a pod with its apps into pods/prepared and returns its UUID.
func (r *Runtime) Prepare(ctx context.Context, opts PrepareOptions) (string, error) {
	uuid, err := r.prepare(ctx, opts)
	r.changed(uuid)
	return uuid, err
}

// RunPrepared starts a prepared pod (mode run: every app starts, the pod
// exits when all apps have exited). It returns once stage1 is ready.
func (r *Runtime) RunPrepared(ctx context.Context, uuid string) error {
	defer r.changed(uuid)
	return r.runPrepared(ctx, uuid, modeRun)
}

// Run prepares and starts a pod; it returns the UUID once stage1 is ready.
func (r *Runtime) Run(ctx context.Context, opts PrepareOptions) (string, error) {
	uuid, err := r.run(ctx, opts)
	r.changed(uuid)
	return uuid, err
}

// Sandbox starts a pod without apps (mode sandbox: it lives until stopped),
// with its network set up; apps are added with AddApp.
func (r *Runtime) Sandbox(ctx context.Context, opts PodOptions) (string, error) {
	uuid, err := r.sandbox(ctx, opts)
	r.changed(uuid)
	return uuid, err
}

// AddApp creates an app in a running sandbox pod (not started).
func (r *Runtime) AddApp(ctx context.Context, uuid string, opts AppOptions) (string, error) {
	defer r.changed(uuid)
	return r.addApp(ctx, uuid, opts)
}

// StartApp starts a created app of a running pod.
func (r *Runtime) StartApp(ctx context.Context, uuid, app string) error {
	defer r.changed(uuid)
	return r.startApp(ctx, uuid, app)
}

// StopApp stops a running app: SIGTERM, SIGKILL after opts.Timeout. Stopping
// an app that is not running succeeds.
func (r *Runtime) StopApp(ctx context.Context, uuid, app string, opts StopOptions) error {
	defer r.changed(uuid)
	return r.stopApp(ctx, uuid, app, opts)
}

// RemoveApp removes a stopped (or stops a running) app from a pod: its
// container, rootfs mount and directory.
func (r *Runtime) RemoveApp(ctx context.Context, uuid, app string) error {
	defer r.changed(uuid)
	return r.removeApp(ctx, uuid, app)
}

// Stop stops a running pod (its apps, then stage1) and releases its
// resources (network, mounts, cgroups). Stopping a stopped pod succeeds.
func (r *Runtime) Stop(ctx context.Context, uuid string, opts StopOptions) error {
	defer r.changed(uuid)
	return r.stop(ctx, uuid, opts)
}

// Remove deletes a pod that is not running (prepared, exited or garbage)
// after releasing its resources; with force a running pod is stopped first.
func (r *Runtime) Remove(ctx context.Context, uuid string, force bool) error {
	defer r.changed(uuid)
	return r.remove(ctx, uuid, force)
}

// GC moves exited pods to exited-garbage and releases their resources,
// deletes exited-garbage pods older than the grace period, expired
// prepared pods, aborted prepares and interrupted deletions, and releases
// the network resources of vanished pods. With opts.DebrisOnly it does
// only the last three, and releases the resources of pods whose start was
// cut off (GCOptions.DebrisOnly). Pods being created, run or changed
// (locked) are left alone.
func (r *Runtime) GC(ctx context.Context, opts GCOptions) (*GCResult, error) {
	if r.view != nil {
		defer r.view.changedAll()
	}
	return r.gc(ctx, opts)
}

// List returns the status of every pod.
func (r *Runtime) List(ctx context.Context) ([]*PodStatus, error) {
	return r.list(ctx)
}

// ListGen is List with the generation of the in-memory view (Config.Watch)
// the answer is of: while Generation returns the same, List would answer
// the same. 0: no view, or pods that are read from disk on every call.
// The statuses are shared: read-only.
func (r *Runtime) ListGen(ctx context.Context) ([]*PodStatus, uint64, error) {
	if r.view == nil {
		pods, err := r.list(ctx)
		return pods, 0, err
	}
	return r.view.list()
}

// Generation is the in-memory view's generation (see ListGen); 0 without
// a view.
func (r *Runtime) Generation() uint64 {
	if r.view == nil {
		return 0
	}
	r.view.checkStateDirs()
	return r.view.gen.Load()
}

// Status returns the status of one pod.
func (r *Runtime) Status(ctx context.Context, uuid string) (*PodStatus, error) {
	return r.status(ctx, uuid)
}

// Wait blocks until the pod is no longer running (or ctx ends) and returns
// its final status.
func (r *Runtime) Wait(ctx context.Context, uuid string) (*PodStatus, error) {
	return r.wait(ctx, uuid)
}

// ResolveUUID expands a UUID prefix to the full UUID of an existing pod.
func (r *Runtime) ResolveUUID(prefix string) (string, error) {
	p, err := r.findPod(prefix)
	if err != nil {
		return "", err
	}
	return p.uuid, nil
}

// Manifest returns the pod manifest.
func (r *Runtime) Manifest(uuid string) (*schema.PodManifest, error) {
	return r.manifest(uuid)
}

// AppSpec returns the OCI runtime spec stage0 built for an app.
func (r *Runtime) AppSpec(uuid, app string) (*specs.Spec, error) {
	return r.appSpec(uuid, app)
}

// Exec runs a process in a running app and returns its exit code.
func (r *Runtime) Exec(ctx context.Context, uuid string, opts ExecOptions) (int, error) {
	return r.exec(ctx, uuid, opts)
}

// Enter runs args (default /bin/sh) in a running app with the given stdio;
// it is Exec with rkt enter's defaults.
func (r *Runtime) Enter(ctx context.Context, uuid string, opts ExecOptions) (int, error) {
	if len(opts.Args) == 0 {
		opts.Args = []string{"/bin/sh"}
	}
	return r.exec(ctx, uuid, opts)
}

// Attach connects to a running app's stdio until it exits or ctx ends.
func (r *Runtime) Attach(ctx context.Context, uuid string, opts AttachOptions) error {
	return r.attach(ctx, uuid, opts)
}

// UpdateAppResources changes the cgroup limits of a running app. The pod's
// status and the app's spec stay as they are (the supervisor writes
// nothing; the limits in force are read with the stats), so the view keeps
// the pod: only its stats are dropped.
func (r *Runtime) UpdateAppResources(ctx context.Context, uuid, app string, res *specs.LinuxResources) error {
	if r.stats != nil {
		if p, err := r.findPod(uuid); err == nil {
			defer r.stats.forget(p.uuid) // the limits in force changed
		}
	}
	return r.updateAppResources(ctx, uuid, app, res)
}

// AppStats returns the resource usage of a running app (with
// Config.Watch, as read at most statsInterval ago).
func (r *Runtime) AppStats(ctx context.Context, uuid, app string) (*AppStats, error) {
	return r.appStats(ctx, uuid, app)
}

// PodStats returns the resource usage of a running pod: its cgroup's (all
// apps together) and its network interfaces' (with Config.Watch, as read
// at most statsInterval ago).
func (r *Runtime) PodStats(ctx context.Context, uuid string) (*AppStats, error) {
	return r.podStats(ctx, uuid)
}

// ReopenAppLog makes stage1 reopen an app's log file (after rotation).
func (r *Runtime) ReopenAppLog(ctx context.Context, uuid, app string) error {
	return r.reopenAppLog(ctx, uuid, app)
}

// ImagesInUse returns the IDs of images used by any pod: from the
// in-memory view when the Runtime has one, else from disk.
func (r *Runtime) ImagesInUse() (map[string]bool, error) {
	if r.view != nil {
		return r.view.imagesInUse()
	}
	return ImagesInUse(r.cfg.DataDir)
}
