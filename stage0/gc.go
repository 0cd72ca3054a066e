package stage0

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rkt/rkt/networking"
	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/lock"
	"github.com/rkt/rkt/pkg/schema"
)

// Defaults of GCOptions, as in rkt.
const (
	DefaultGCGracePeriod  = 30 * time.Minute
	DefaultExpirePrepared = 24 * time.Hour
)

func (r *Runtime) gc(ctx context.Context, opts GCOptions) (*GCResult, error) {
	res := &GCResult{Errors: map[string]error{}}
	pods, err := r.allPods()
	if err != nil {
		return nil, err
	}
	r.removeStaleNewDirs()
	now := time.Now()
	for _, p := range pods {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if p.state != dirPrepare && p.state != dirGarbage { // those go whole
			r.removeStaleTemp(p)
		}
		if p.state == dirRun {
			r.removeStaleCheckpoints(p)
		}
		debrisOnly := opts.DebrisOnly || r.owned(p, opts.Owned)
		if debrisOnly && p.state == dirRun {
			released, err := r.releaseCutOff(ctx, p)
			if err != nil {
				res.Errors[p.uuid] = err
				r.log.Debug("gc: cannot release a pod cut off while starting", "pod", p.uuid, "error", err) // returned in res.Errors
			}
			if released {
				res.Released = append(res.Released, p.uuid)
			}
			continue
		}
		collected, removed, err := r.gcPod(ctx, p, opts, debrisOnly, now)
		if err != nil {
			res.Errors[p.uuid] = err
			r.log.Debug("gc: cannot collect a pod", "pod", p.uuid, "error", err) // returned in res.Errors
		}
		if collected {
			res.Collected = append(res.Collected, p.uuid)
		}
		if removed {
			res.Removed = append(res.Removed, p.uuid)
		}
	}
	if err := networking.GC(ctx, r.cfg.Net, r.podExists); err != nil {
		res.Network = fmt.Errorf("cannot release the network resources of vanished pods: %w", err)
		r.log.Debug("gc: network", "error", res.Network) // returned in res.Network
	}
	return res, nil
}

// podExists reports whether a pod directory named uuid exists in any state,
// including one being created (prepare/.new-<uuid>). A name that is not a
// pod UUID is not stage0's: it is reported as existing so it is left alone.
func (r *Runtime) podExists(uuid string) bool {
	if !schema.IsUUID(uuid) {
		return true
	}
	candidates := []string{filepath.Join(r.stateDir(dirPrepare), newPodPrefix+uuid)}
	for _, s := range podStateDirs {
		candidates = append(candidates, filepath.Join(r.stateDir(s), uuid))
	}
	for _, c := range candidates {
		if _, err := os.Lstat(c); err == nil {
			return true
		}
	}
	// a pod moving between two states may be missed once: look again
	for _, s := range podStateDirs {
		if _, err := os.Lstat(filepath.Join(r.stateDir(s), uuid)); err == nil {
			return true
		}
	}
	return false
}

// gcPod moves one pod forward in its lifecycle if it is due.
// owned reports whether p is one of those owned says a long-lived owner
// removes (GCOptions.Owned); a pod whose manifest cannot be read is not.
func (r *Runtime) owned(p *pod, owned func(map[string]string) bool) bool {
	if owned == nil || (p.state != dirRun && p.state != dirExitedGarbage && p.state != dirPrepared) {
		return false
	}
	pm, err := p.readManifest()
	return err == nil && owned(pm.Annotations)
}

func (r *Runtime) gcPod(ctx context.Context, p *pod, opts GCOptions, debrisOnly bool, now time.Time) (collected, removed bool, err error) {
	if debrisOnly && p.state != dirPrepare && p.state != dirGarbage {
		return false, false, nil // not debris: its owner collects it
	}
	l, err := lock.TryExclusive(p.dir, lock.Dir)
	if errors.Is(err, lock.ErrLocked) {
		return false, false, nil // running, preparing or being deleted
	}
	if err != nil {
		if _, serr := os.Stat(p.dir); serr != nil {
			return false, false, nil // gone meanwhile
		}
		return false, false, err
	}
	defer l.Close()
	if _, err := os.Stat(p.dir); err != nil {
		return false, false, nil // moved before we locked it
	}
	fi, err := os.Stat(p.dir)
	if err != nil {
		return false, false, err
	}
	age := now.Sub(fi.ModTime())
	switch p.state {
	case dirRun: // exited: release its resources, keep it for the grace period
		if err := r.cleanup(ctx, p); err != nil {
			return false, false, err
		}
		if err := r.move(p, dirExitedGarbage); err != nil {
			return false, false, err
		}
		os.Chtimes(p.dir, now, now)
		collected = true
		if opts.GracePeriod > 0 {
			return collected, false, nil
		}
	case dirExitedGarbage:
		if age < opts.GracePeriod {
			return false, false, nil
		}
	case dirPrepared:
		if age < opts.ExpirePrepared {
			return false, false, nil
		}
	case dirPrepare, dirGarbage: // aborted prepare or interrupted deletion
	default:
		return false, false, nil
	}
	if err := r.destroy(ctx, p); err != nil {
		return collected, false, err
	}
	return true, true, nil
}

// releaseCutOff releases the resources of a pod in run/ whose start was
// cut off (not marked started) and whose stage0 and supervisor are gone
// (unlocked): nobody else will. It stays in run/, exited, for its owner
// to remove. It reports whether it released anything.
func (r *Runtime) releaseCutOff(ctx context.Context, p *pod) (bool, error) {
	cutOff := func() bool {
		for _, f := range []string{p.layout().Started(), p.layout().Cleaned()} {
			if _, err := os.Lstat(f); err == nil {
				return false
			}
		}
		return true
	}
	if !cutOff() {
		return false, nil
	}
	l, err := lock.TryExclusive(p.dir, lock.Dir)
	if errors.Is(err, lock.ErrLocked) {
		return r.stopCutOff(ctx, p, cutOff) // starting, running or being stopped
	}
	if err != nil {
		if _, serr := os.Stat(p.dir); serr != nil {
			return false, nil // gone meanwhile
		}
		return false, err
	}
	defer l.Close()
	if _, err := os.Stat(p.dir); err != nil || !cutOff() {
		return false, nil // moved, or started, before we locked it
	}
	if err := r.cleanup(ctx, p); err != nil {
		return false, err
	}
	return true, nil
}

// cutOffStopTimeout is the apps' grace period when stopping a pod whose
// start was cut off: nobody was told it runs.
const cutOffStopTimeout = 5 * time.Second

// stopCutOff stops and releases a pod whose supervisor runs but whose
// stage0 died before marking it started (its starting lock is free): its
// network or etc files may be missing, so it must not pass for started.
// A pod without a starting lock file (created by an older rkt) is left.
func (r *Runtime) stopCutOff(ctx context.Context, p *pod, cutOff func() bool) (bool, error) {
	starting := p.layout().Starting()
	if _, err := os.Lstat(starting); err != nil {
		return false, nil
	}
	sl, err := lock.TryExclusive(starting, lock.RegFile)
	if err != nil {
		return false, nil // still starting (or gone meanwhile)
	}
	defer sl.Close()
	if !cutOff() {
		return false, nil // started before we locked it
	}
	r.log.Warn("stopping a pod whose start was cut off after its supervisor started", "pod", p.uuid)
	if err := r.stop(ctx, p.uuid, StopOptions{Timeout: cutOffStopTimeout}); err != nil {
		return false, fmt.Errorf("cannot stop pod %s, cut off while starting: %w", p.uuid, err)
	}
	return true, nil
}

// newDirMinAge is how old an unlocked prepare/.new-<uuid> dir must be to
// be collected: createPod locks it right after making it, and must not
// lose it in between to a GC (the kubelet-service runs one periodically).
const newDirMinAge = 10 * time.Second

// removeStaleNewDirs deletes pod directories whose creation was interrupted
// before they got their name (prepare/.new-<uuid>, unlocked, older than
// newDirMinAge).
func (r *Runtime) removeStaleNewDirs() {
	r.removeAbandoned(r.stateDir(dirPrepare), func(name string) bool { return strings.HasPrefix(name, newPodPrefix) })
}

// removeStaleTemp removes the stale temporary files of atomic writes
// (fileperm.RemoveStaleTemp) that writers killed before their rename left
// in the pod's directory and its apps' directories, which may be kept for
// long after (a running pod, the kubelet's exited sandboxes).
func (r *Runtime) removeStaleTemp(p *pod) {
	dirs := []string{p.dir}
	apps, _ := os.ReadDir(p.layout().AppsDir())
	for _, a := range apps {
		if a.IsDir() {
			dirs = append(dirs, string(p.appDir(a.Name())))
		}
	}
	for _, d := range dirs {
		if err := fileperm.RemoveStaleTemp(d); err != nil {
			r.log.Warn("gc: cannot remove stale temporary files", "pod", p.uuid, "error", err)
		}
	}
}

// removeAbandoned removes the entries of dir that match, are older than
// newDirMinAge (a new one may not be locked by its maker yet) and that no
// one holds locked (lock.Dir).
func (r *Runtime) removeAbandoned(dir string, match func(name string) bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !match(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < newDirMinAge {
			continue // gone, or maybe about to be locked by its maker
		}
		l, err := lock.TryExclusive(path, lock.Dir)
		if err != nil {
			continue // in use
		}
		if err := os.RemoveAll(path); err != nil {
			r.log.Warn("gc: cannot remove a stale directory", "path", path, "error", err)
		}
		l.Close()
	}
}
