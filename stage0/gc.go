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
	"github.com/rkt/rkt/pkg/lock"
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
		collected, removed, err := r.gcPod(ctx, p, opts, now)
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
	if !isUUID(uuid) {
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
func (r *Runtime) gcPod(ctx context.Context, p *pod, opts GCOptions, now time.Time) (collected, removed bool, err error) {
	if opts.DebrisOnly && p.state != dirPrepare && p.state != dirGarbage {
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

// newDirMinAge is how old an unlocked prepare/.new-<uuid> dir must be to
// be collected: createPod locks it right after making it, and must not
// lose it in between to a GC (the kubelet-service runs one periodically).
const newDirMinAge = 10 * time.Second

// removeStaleNewDirs deletes pod directories whose creation was interrupted
// before they got their name (prepare/.new-<uuid>, unlocked, older than
// newDirMinAge).
func (r *Runtime) removeStaleNewDirs() {
	dir := r.stateDir(dirPrepare)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), newPodPrefix) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < newDirMinAge {
			continue // gone, or maybe about to be locked by its creator
		}
		l, err := lock.TryExclusive(path, lock.Dir)
		if err != nil {
			continue // being created right now
		}
		if err := os.RemoveAll(path); err != nil {
			r.log.Warn("gc: cannot remove a stale directory", "path", path, "error", err)
		}
		l.Close()
	}
}
