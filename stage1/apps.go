package main

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/rkt/rkt/pkg/schema"
)

// manifestApp re-reads the pod manifest (stage0 rewrites it when it adds
// apps) and returns the named app.
func (sv *supervisor) manifestApp(name string) (*schema.App, error) {
	m, err := readManifest(sv.podDir)
	if err != nil {
		return nil, err
	}
	for i := range m.Apps {
		if m.Apps[i].Name == name {
			return &m.Apps[i], nil
		}
	}
	return nil, errNotFound(name)
}

// lookup returns the app named name, known or listed in the manifest.
func (sv *supervisor) lookup(name string) (*app, error) {
	if name == "" {
		return nil, errInvalid("no app name")
	}
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if a, ok := sv.apps[name]; ok {
		return a, nil
	}
	am, err := sv.manifestApp(name)
	if err != nil {
		return nil, err
	}
	a := &app{sv: sv, name: name, manifest: *am,
		status: schema.AppStatus{Name: name, State: schema.AppCreated, CreatedAt: am.CreatedAt}}
	sv.apps[name] = a
	return a, nil
}

// startApp starts (or restarts) an app of the manifest; the deadline (zero
// for none) bounds the restore of a checkpointed app.
func (sv *supervisor) startApp(name string, deadline time.Time) error {
	a, err := sv.lookup(name)
	if err != nil {
		return err
	}
	am, err := sv.manifestApp(name)
	if err != nil {
		return err
	}
	sv.mu.Lock()
	stopping := sv.stopping
	sv.mu.Unlock()
	if stopping {
		return fmt.Errorf("cannot start app %q: the pod is stopping", name)
	}
	a.starting.wait(deadline)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.starting.waited()
	if a.running() {
		return errRunning(name)
	}
	// The app was locked by its prestart (which can hang: its container's
	// init blocked in a mount) until past the caller's deadline: the caller
	// has been told the start failed, so it does not run.
	if !deadline.IsZero() && time.Now().After(deadline) {
		return fmt.Errorf("cannot start app %q: its container was still being created at the request's deadline (%w)", name, context.DeadlineExceeded)
	}
	a.manifest = *am
	t0 := time.Now()
	if err := a.start(deadline); err != nil {
		return err
	}
	slog.Debug("app started", "app", name, "after", time.Since(t0))
	return nil
}

// prestartApp creates the app's container in the background, its process
// to be run by startApp. The app need not be in the pod manifest yet (stage0
// writes it meanwhile). The app stays locked until its container is
// created, so that a start waits for it.
func (sv *supervisor) prestartApp(am *schema.App) error {
	if am.Name == "" {
		return errInvalid("no app name")
	}
	sv.mu.Lock()
	a, ok := sv.apps[am.Name]
	if !ok {
		a = &app{sv: sv, name: am.Name, manifest: *am,
			status: schema.AppStatus{Name: am.Name, State: schema.AppCreated, CreatedAt: am.CreatedAt}}
		sv.apps[am.Name] = a
	}
	sv.mu.Unlock()
	a.mu.Lock()
	sv.mu.Lock()
	stopping := sv.stopping
	sv.mu.Unlock()
	if stopping || a.running() || a.pre != nil || a.status.State != schema.AppCreated {
		a.mu.Unlock()
		return nil // nothing to prepare: start does what is needed
	}
	a.manifest = *am
	sv.enter() // a prestarted container is in flight until started or dropped (idle.go)
	// the cgroup move's grace period, while the container is prepared
	go warmCgroupAttach()
	go func() {
		defer a.mu.Unlock()
		if !a.prestart() {
			sv.leave()
		}
	}()
	return nil
}

// removeApp forgets a stopped app and destroys what is left of its container.
func (sv *supervisor) removeApp(name string) error {
	a, err := sv.lookup(name)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running() {
		return errRunning(name)
	}
	a.dropPrestarted()
	a.destroyStale()
	sv.mu.Lock()
	delete(sv.apps, name)
	sv.mu.Unlock()
	return nil
}

// snapshot returns the known apps.
func (sv *supervisor) snapshot() []*app {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	apps := make([]*app, 0, len(sv.apps))
	for _, a := range sv.apps {
		apps = append(apps, a)
	}
	return apps
}

// statuses returns the status of every app the supervisor knows, by name.
func (sv *supervisor) statuses() []schema.AppStatus {
	apps := sv.snapshot()
	out := make([]schema.AppStatus, 0, len(apps))
	for _, a := range apps {
		a.mu.Lock()
		out = append(out, a.status)
		a.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (sv *supervisor) reopenLog(name string) error {
	a, err := sv.lookup(name)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.running() {
		return errNotRunning(name)
	}
	return a.log.Reopen()
}

// stats reads the running app's cgroup usage through libcontainer.
