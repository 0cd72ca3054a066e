package stage0

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/rkt/rkt/networking"
	"github.com/rkt/rkt/pkg/lock"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

// recordSupervisorDeath records durably the death of a pod's supervisor
// that left apps recorded as running: they died with it, when it was first
// found dead (control.NoteSupervisorDeath). The statuses are rewritten
// under the pod lock, which is free only once the supervisor is gone; when
// someone else holds it (a stop or GC, which records the same through
// `stage1 gc`), or the pod moved, or the caller may not write, they are
// left alone. It returns the time of death.
func recordSupervisorDeath(p *pod) time.Time {
	if p.state != dirRun || !hasRunningApps(p) {
		return time.Time{}
	}
	at, err := control.NoteSupervisorDeath(p.dir)
	if err != nil {
		return at
	}
	l, err := lock.TryExclusive(p.dir, lock.Dir)
	if err != nil {
		return at
	}
	defer l.Close()
	if _, err := os.Stat(p.dir); err == nil { // not moved before we locked it
		control.MarkSupervisorDead(p.dir, at)
	}
	return at
}

// hasRunningApps reports whether an app of the pod is recorded as running.
func hasRunningApps(p *pod) bool {
	sts, _ := control.ReadPodStatus(p.dir)
	for _, st := range sts {
		if st.State == schema.AppRunning {
			return true
		}
	}
	return false
}

func (r *Runtime) status(ctx context.Context, uuid string) (*PodStatus, error) {
	if r.view != nil {
		r.view.checkStateDirs()
		// known to the view: its entry is current (or read again), no
		// need to look for the pod on disk
		if full, err := r.view.resolve(uuid); err == nil && full != "" {
			st, err := r.view.status(full)
			if !errors.Is(err, ErrPodNotFound) {
				return st, err
			}
		}
	}
	p, err := r.findPod(uuid)
	if err != nil {
		return nil, err
	}
	if r.view != nil {
		st, err := r.view.status(p.uuid)
		if !errors.Is(err, ErrPodNotFound) {
			return st, err
		}
	}
	return r.podStatus(p)
}

func (r *Runtime) list(ctx context.Context) ([]*PodStatus, error) {
	if r.view != nil {
		pods, _, err := r.view.list()
		return pods, err
	}
	pods, err := r.allPods()
	if err != nil {
		return nil, err
	}
	out := make([]*PodStatus, 0, len(pods))
	for _, p := range pods {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		st, err := r.podStatus(p)
		if err != nil {
			if !errors.Is(err, ErrPodNotFound) { // else removed or moved while we listed
				r.leaveOut(p.uuid, err)
			}
			continue
		}
		out = append(out, st)
	}
	return out, nil
}

// leaveOut notes a pod a list leaves out because its status cannot be read
// (a newer rkt's manifest after a rollback, a corrupt file): one such pod
// must not hide the others (the kubelet relists every second, and a failed
// relist marks the node unhealthy). It is logged once; Status of its UUID
// still says what is wrong.
func (r *Runtime) leaveOut(uuid string, err error) {
	if _, seen := r.unreadable.Swap(uuid, err); !seen {
		r.log.Warn("cannot read a pod: it is left out of pod lists", "pod", uuid, "error", err)
	}
}

// LeftOut returns the pods lists left out so far, by UUID, with why.
func (r *Runtime) LeftOut() map[string]error {
	out := map[string]error{}
	r.unreadable.Range(func(k, v any) bool {
		out[k.(string)] = v.(error)
		return true
	})
	return out
}

// podStatus reads a pod's state from its directory, lock and status files.
func (r *Runtime) podStatus(p *pod) (*PodStatus, error) {
	for attempt := 0; ; attempt++ {
		st, err := p.podState()
		if err == nil {
			ps, err := buildStatus(p, st)
			if err == nil {
				return ps, nil
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
		// the pod moved (or vanished) under us: look again
		if attempt == 3 {
			return nil, fmt.Errorf("pod %s: %w", p.uuid, ErrPodNotFound)
		}
		if p, err = r.findPod(p.uuid); err != nil {
			return nil, err
		}
	}
}

func buildStatus(p *pod, state PodState) (*PodStatus, error) {
	if _, err := os.Stat(p.dir); err != nil {
		return nil, err
	}
	ps := &PodStatus{UUID: p.uuid, State: state, Dir: p.dir}
	pm, err := p.readManifest()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			switch state {
			case PodPreparing:
				ps.State = PodEmbryo // being created right now
				return ps, nil
			case PodAbortedPrepare, PodGarbage, PodDeleting:
				return ps, nil
			}
		}
		return nil, err
	}
	ps.Manifest = pm
	ps.CreatedAt = pm.CreatedAt
	running := state == PodRunning
	var diedAt time.Time // when the supervisor was found dead
	if fi, err := os.Stat(p.layout().Stage1PID()); err == nil {
		ps.StartedAt = fi.ModTime()
		if running {
			ps.Stage1PID = stage1PID(p)
		}
	}
	for _, a := range pm.Apps {
		as := AppStatus{App: a, ImageRef: a.Image.Name, LogPath: a.LogPath}
		if as.LogPath == "" {
			as.LogPath = p.appDir(a.Name).DefaultLog()
		} else if !filepath.IsAbs(as.LogPath) {
			as.LogPath = filepath.Join(string(p.appDir(a.Name)), as.LogPath)
		}
		st, err := control.ReadAppStatus(p.dir, a.Name)
		switch {
		case err == nil:
			as.AppStatus = *st
		case errors.Is(err, fs.ErrNotExist):
			as.AppStatus = schema.AppStatus{Name: a.Name, State: schema.AppCreated, CreatedAt: a.CreatedAt}
		default:
			as.AppStatus = schema.AppStatus{Name: a.Name, State: schema.AppUnknown, CreatedAt: a.CreatedAt, Message: err.Error()}
		}
		if !running && as.State == schema.AppRunning && state == PodExited && diedAt.IsZero() {
			// a supervisor that died unseen (no stage0 that started it
			// lived): record its apps' end as when it was found dead
			diedAt = recordSupervisorDeath(p)
			if st, err := control.ReadAppStatus(p.dir, a.Name); err == nil {
				as.AppStatus = *st
			}
		}
		if !running && as.State == schema.AppRunning {
			// the supervisor died and its apps' statuses are not
			// rewritten yet (being cleaned up, or read-only caller)
			if diedAt.IsZero() {
				diedAt, _ = control.NoteSupervisorDeath(p.dir)
			}
			control.MarkDead(&as.AppStatus, diedAt)
		}
		if as.State == schema.AppExited {
			if as.ExitCode != 0 && ps.ExitCode == 0 {
				ps.ExitCode = as.ExitCode
			}
			if as.FinishedAt.After(ps.FinishedAt) {
				ps.FinishedAt = as.FinishedAt
			}
		}
		ps.Apps = append(ps.Apps, as)
	}
	if running {
		ps.FinishedAt = time.Time{}
	} else if ps.FinishedAt.IsZero() && !ps.StartedAt.IsZero() {
		for _, f := range []string{p.layout().Stage1Died(), p.layout().Stage1Clean(), p.layout().Cleaned()} {
			if fi, err := os.Stat(f); err == nil {
				ps.FinishedAt = fi.ModTime()
				break
			}
		}
	}
	if res, err := networking.Load(p.dir); err == nil {
		for _, n := range res.Networks {
			ns := NetworkStatus{Name: n.Name, Interface: n.IfName}
			for _, ip := range n.IPs {
				ns.IPs = append(ns.IPs, ip.Address)
				if ns.Gateway == "" {
					ns.Gateway = ip.Gateway
				}
			}
			ps.Networks = append(ps.Networks, ns)
		}
	}
	return ps, nil
}

func (r *Runtime) wait(ctx context.Context, uuid string) (*PodStatus, error) {
	for {
		p, st, err := r.findPodState(uuid)
		if err != nil {
			return nil, err
		}
		switch st {
		case PodRunning:
			// block on the lock until the supervisor releases it
			l, err := lock.New(p.dir, lock.Dir)
			if err != nil {
				continue
			}
			err = l.SharedLock(ctx)
			l.Close()
			if err != nil {
				return nil, err
			}
		case PodEmbryo, PodPreparing, PodPrepared:
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		default:
			return r.podStatus(p)
		}
	}
}
