package stage0

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/schema"
)

// Unmounting an app's overlay rootfs syncs its upper filesystem: tens of
// milliseconds on ext4, which RemoveContainer would wait for. A long-lived
// Runtime (Config.Watch) moves a removed app's directory aside, into the
// pod's RemovedApps directory, and unmounts and deletes it in the background, as
// containerd deletes snapshots in its garbage collector. Removing the pod
// waits for that; what a crash left behind is under the pod directory,
// which removePodDir unmounts and deletes with the pod.
//
// That move is also what makes the removal durable: an app that the
// manifest lists without its directory is removed
// (schema.PodDir.DropRemovedApps), so one sync of the apps directory
// after the move suffices before the call returns, where a manifest
// rewritten durably took two (the new file's and the pod directory's).
// The manifest is rewritten in the background, under the manifest lock,
// held until then; one a crash left stale is rewritten by the next change
// (lockedManifest).

// backgroundRemovals tracks the background deletions of each pod.
type backgroundRemovals struct {
	mu   sync.Mutex
	pods map[string]*sync.WaitGroup
	// rewrites has, for a pod whose manifest a removal rewrites in the
	// background, a channel closed once it released the manifest lock
	rewrites map[string]chan struct{}
}

// rewriting returns the channel of the pod's background manifest rewrite,
// nil without one.
func (b *backgroundRemovals) rewriting(uuid string) chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rewrites[uuid]
}

// startRewrite records a background manifest rewrite of the pod; its
// returned func ends it.
func (b *backgroundRemovals) startRewrite(uuid string) func() {
	done := make(chan struct{})
	b.mu.Lock()
	if b.rewrites == nil {
		b.rewrites = map[string]chan struct{}{}
	}
	b.rewrites[uuid] = done
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		if b.rewrites[uuid] == done {
			delete(b.rewrites, uuid)
		}
		b.mu.Unlock()
		close(done)
	}
}

// dropApp removes the app name from the pod: from pm, its manifest read
// under the manifest lock, which dropApp releases (release).
func (r *Runtime) dropApp(p *pod, pm *schema.PodManifest, name string, release func()) error {
	if i := appIndex(pm, name); i >= 0 {
		pm.Apps = append(pm.Apps[:i], pm.Apps[i+1:]...)
	}
	if r.cfg.Watch {
		if aside, err := r.moveAside(p, name); err == nil {
			if err := fileperm.SyncDir(p.layout().AppsDir()); err == nil {
				rewritten := r.removals.startRewrite(p.uuid)
				r.inBackground(p.uuid, func() {
					// the move's other half, so that nothing is left unreachable
					if err := fileperm.SyncDir(p.layout().RemovedApps()); err != nil {
						r.log.Warn("cannot sync the removed apps", "pod", p.uuid, "error", err)
					}
					if err := p.writeManifest(pm); err != nil {
						r.log.Warn("cannot rewrite the manifest after a removal", "pod", p.uuid, "app", name, "error", err)
					}
					release()
					rewritten()
					r.deleteAside(p, name, aside)
				})
				return nil
			}
			// the move may not be durable: the manifest says it first
			r.inBackground(p.uuid, func() { r.deleteAside(p, name, aside) })
			defer release()
			return p.writeManifest(pm)
		}
	}
	defer release()
	if err := p.writeManifest(pm); err != nil {
		return err
	}
	return removePodDir(string(p.appDir(name)))
}

// removeAppDir deletes the directory of an app the manifest does not list.
func (r *Runtime) removeAppDir(p *pod, name string) error {
	if r.cfg.Watch {
		if aside, err := r.moveAside(p, name); err == nil {
			r.inBackground(p.uuid, func() { r.deleteAside(p, name, aside) })
			return nil
		}
	}
	return removePodDir(string(p.appDir(name)))
}

// deleteAside unmounts and deletes the directory of a removed app moved
// aside.
func (r *Runtime) deleteAside(p *pod, name, aside string) {
	if err := removePodDir(aside); err != nil {
		r.log.Warn("cannot delete a removed app", "pod", p.uuid, "app", name, "error", err)
	}
}

// moveAside renames the directory of an app into RemovedApps and returns
// its new path.
func (r *Runtime) moveAside(p *pod, name string) (string, error) {
	removed := p.layout().RemovedApps()
	if _, err := os.Lstat(removed); err != nil {
		if err := fileperm.Mkdir(removed, fileperm.Private); err != nil {
			return "", err
		}
	}
	dir := string(p.appDir(name))
	for i := 0; i < 3; i++ {
		aside := filepath.Join(removed, name+"."+strconv.FormatUint(rand.Uint64(), 36))
		err := unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, aside, unix.RENAME_NOREPLACE)
		if err == nil {
			return aside, nil
		}
		if err != unix.EEXIST {
			if err == unix.EINVAL { // a filesystem without RENAME_NOREPLACE
				return moveOntoTemp(dir, removed, name)
			}
			return "", err
		}
	}
	return moveOntoTemp(dir, removed, name)
}

// moveOntoTemp is moveAside with a new empty directory as the target.
func moveOntoTemp(dir, removed, name string) (string, error) {
	aside, err := os.MkdirTemp(removed, name+".")
	if err != nil {
		return "", err
	}
	if err := unix.Rename(dir, aside); err != nil { // onto the empty aside (os.Rename refuses)
		os.Remove(aside)
		return "", err
	}
	return aside, nil
}

// inBackground runs f in a goroutine that removing the pod waits for.
func (r *Runtime) inBackground(uuid string, f func()) {
	r.removals.mu.Lock()
	if r.removals.pods == nil {
		r.removals.pods = map[string]*sync.WaitGroup{}
	}
	wg := r.removals.pods[uuid]
	if wg == nil {
		wg = &sync.WaitGroup{}
		r.removals.pods[uuid] = wg
	}
	wg.Add(1)
	r.removals.mu.Unlock()
	go func() {
		defer wg.Done()
		f()
	}()
}

// waitRemovals waits for the background deletions in a pod, or of every
// pod when uuid is "".
func (r *Runtime) waitRemovals(uuid string) {
	r.removals.mu.Lock()
	var wgs []*sync.WaitGroup
	for u, wg := range r.removals.pods {
		if uuid == "" || u == uuid {
			wgs = append(wgs, wg)
			delete(r.removals.pods, u)
		}
	}
	r.removals.mu.Unlock()
	for _, wg := range wgs {
		wg.Wait()
	}
}
