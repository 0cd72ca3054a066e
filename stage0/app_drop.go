package stage0

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/fileperm"
)

// Unmounting an app's overlay rootfs syncs its upper filesystem: tens of
// milliseconds on ext4, which RemoveContainer would wait for. A long-lived
// Runtime (Config.Watch) moves a removed app's directory aside, into the
// pod's RemovedApps directory, and unmounts and deletes it in the background, as
// containerd deletes snapshots in its garbage collector. Removing the pod
// waits for that; what a crash left behind is under the pod directory,
// which removePodDir unmounts and deletes with the pod.

// backgroundRemovals tracks the background deletions of each pod.
type backgroundRemovals struct {
	mu   sync.Mutex
	pods map[string]*sync.WaitGroup
}

// removeAppDir deletes the directory of a removed app.
func (r *Runtime) removeAppDir(p *pod, name string) error {
	dir := string(p.appDir(name))
	if !r.cfg.Watch {
		return removePodDir(dir)
	}
	removed := p.layout().RemovedApps()
	if err := fileperm.Mkdir(removed, fileperm.Private); err != nil {
		return removePodDir(dir)
	}
	aside, err := os.MkdirTemp(removed, name+".")
	if err != nil {
		return removePodDir(dir)
	}
	if err := unix.Rename(dir, aside); err != nil { // onto the empty aside (os.Rename refuses)
		os.Remove(aside)
		return removePodDir(dir)
	}
	r.removals.mu.Lock()
	if r.removals.pods == nil {
		r.removals.pods = map[string]*sync.WaitGroup{}
	}
	wg := r.removals.pods[p.uuid]
	if wg == nil {
		wg = &sync.WaitGroup{}
		r.removals.pods[p.uuid] = wg
	}
	wg.Add(1)
	r.removals.mu.Unlock()
	go func() {
		defer wg.Done()
		if err := removePodDir(aside); err != nil {
			r.log.Warn("cannot delete a removed app", "pod", p.uuid, "app", name, "error", err)
		}
	}()
	return nil
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
