package stage0

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
)

// The view is the in-memory state of the pods of a long-lived Runtime
// (Config.Watch: the kubelet-service): List and Status answer from it
// instead of reading every pod directory on every call. Disk stays the
// truth: an entry is a PodStatus read from disk by the same code as
// without a view, kept until something may have changed it, then read
// again on next use. What may change a pod, and how the view learns it:
//   - this Runtime's own calls (api.go): the pod is invalidated when the
//     call returns, so a caller reads its own writes;
//   - another process (the rkt CLI, stage1 recording an app's exit, a
//     stage0 stopping or removing the pod): every file of the pod's state
//     is in a directory the view watches with inotify (the state
//     directories, each pod directory, its apps/ and apps/<name>/, where
//     the pod manifest, status.json, stage1.pid, stage1.died, net-info.json
//     and the app manifests are created, renamed or touched);
//   - the supervisor's death (SIGKILL, OOM: it writes nothing): a running
//     pod's stage1 is watched by a pidfd in the same epoll set.
// One goroutine reads both, so another process's change is seen within
// the time it takes to wake it (well under a millisecond when idle).
// Pods in prepare/ and garbage/ (whose state depends on who holds their
// lock, which inotify cannot see) and pods that cannot be watched (too
// few inotify watches) are read from disk on each call, as before.
// inotify was chosen over checking mtimes on each call: a stat per status
// file per call costs ~1 µs each, which at 500 pods alone is most of a 5 ms
// budget, and the lock and the supervisor's liveness have no mtime.

// viewEvents are the inotify events that may change a pod's status. Not
// IN_MODIFY: logs are written all the time and nothing read is modified
// in place without a close or a rename after.
const viewEvents = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_CLOSE_WRITE | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_ONLYDIR

type podView struct {
	r    *Runtime
	ino  int // inotify fd
	ep   int // epoll fd: ino, every pidfd and stopFD
	stop int // eventfd that ends the loop

	// gen is bumped by every invalidation: equal generations before and
	// after mean the view's answers did not change
	gen atomic.Uint64

	// scanning, if set, is called by a scan before it lists the disk
	// (tests: to hold a scan in progress)
	scanning func()

	mu     sync.Mutex
	pods   map[string]*viewEntry
	wds    map[int32]string // watch -> pod uuid ("" for a state directory)
	pidfds map[int]string   // supervisor pidfd -> pod uuid
	// rescan is bumped when events were lost: the state directories are
	// listed again until a scan started at that value completes (scanned)
	rescan, scanned uint64
	// stateDirs are the state directories watched, by path: inotify
	// follows a directory, not its path, so a data dir replaced under
	// the view (restored, moved aside, its filesystem remounted) is seen
	// by comparing them with what the paths name (checkStateDirs)
	stateDirs map[string]stateDirWatch
	// nextCheck is when checkStateDirs looks at the paths again (unix ns)
	nextCheck atomic.Int64

	volumes appVolumeImages // for imagesInUse
}

// stateDirWatch is the watch of a state directory and its identity.
type stateDirWatch struct {
	wd       int32 // -1: the directory was missing
	dev, ino uint64
}

// stateDirsCheck is how often the state directories' paths are checked
// for a replaced data dir.
const stateDirsCheck = time.Second

// stateDirEvents are the events watched on a state directory: those of
// its pods, and its own removal or move.
const stateDirEvents = viewEvents | unix.IN_MOVE_SELF

type viewEntry struct {
	st       *PodStatus           // nil: read it from disk on next use
	gen      uint64               // bumped by every invalidation
	pidfd    int                  // of the running supervisor; -1 for none
	specs    map[string]*keptSpec // by app name; kept across invalidations
	uncached bool                 // not watched: always read from disk
}

// keptSpec is an app's runtime spec and the identity of the file it was
// read from. The spec is written once, when the app is made, while the pod
// changes all the time (an app starts, exits, its supervisor goes lean):
// after a change of the pod, one stat of the file tells whether the spec
// is still the same (reading and parsing it again, with the pod manifest
// to find the app, took ~0.3 ms).
type keptSpec struct {
	spec *specs.Spec
	file fileID
	gen  uint64 // the entry's generation it was last known current at
}

// fileID identifies the content of a file written atomically (a new inode
// each time) or in place (a new size or modification time).
type fileID struct {
	dev, ino, size uint64
	mtime, ctime   int64
}

// fileIDOf returns the identity of a file from its stat.
func fileIDOf(st *unix.Stat_t) fileID {
	return fileID{dev: uint64(st.Dev), ino: st.Ino, size: uint64(st.Size),
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// statFileID returns the identity of the file at path.
func statFileID(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, err
	}
	return fileIDOf(&st), nil
}

// newPodView starts watching the pod state directories of r.
func newPodView(r *Runtime) (*podView, error) {
	if err := r.ensureDirs(); err != nil {
		return nil, err
	}
	ino, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("cannot create an inotify instance for the pod view: %w", err)
	}
	v := &podView{r: r, ino: ino, ep: -1, stop: -1, pods: map[string]*viewEntry{},
		wds: map[int32]string{}, pidfds: map[int]string{}, rescan: 1,
		stateDirs: map[string]stateDirWatch{}}
	v.gen.Store(1) // 0 means no generation
	fail := func(err error) (*podView, error) {
		v.close()
		return nil, err
	}
	if v.ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return fail(fmt.Errorf("cannot create an epoll instance for the pod view: %w", err))
	}
	if v.stop, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return fail(fmt.Errorf("cannot create an eventfd for the pod view: %w", err))
	}
	for _, fd := range []int{ino, v.stop} {
		if err := unix.EpollCtl(v.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			return fail(fmt.Errorf("cannot watch the pod view's events: %w", err))
		}
	}
	for _, s := range podStateDirs {
		w, err := v.watchStateDir(r.stateDir(s))
		if err != nil {
			return fail(err)
		}
		v.stateDirs[r.stateDir(s)] = w
		v.wds[w.wd] = ""
	}
	v.nextCheck.Store(time.Now().Add(stateDirsCheck).UnixNano())
	go v.loop()
	return v, nil
}

// watchStateDir watches a state directory and returns the watch with
// the directory's identity.
func (v *podView) watchStateDir(path string) (stateDirWatch, error) {
	wd, err := unix.InotifyAddWatch(v.ino, path, stateDirEvents)
	if err != nil {
		return stateDirWatch{wd: -1}, fmt.Errorf("cannot watch pod state directory %q: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		unix.InotifyRmWatch(v.ino, uint32(wd))
		return stateDirWatch{wd: -1}, fmt.Errorf("cannot watch pod state directory %q: %w", path, err)
	}
	return stateDirWatch{wd: int32(wd), dev: uint64(st.Dev), ino: st.Ino}, nil
}

// checkStateDirs, at most every stateDirsCheck, checks that the state
// directories' paths still name the directories watched. When one was
// replaced (or is gone), what the view knows is of the old ones: every
// pod is read again from the paths, the state directories are listed
// again and the new ones watched.
func (v *podView) checkStateDirs() {
	now := time.Now().UnixNano()
	next := v.nextCheck.Load()
	if now < next || !v.nextCheck.CompareAndSwap(next, now+int64(stateDirsCheck)) {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	replaced, lost := false, false
	for path, w := range v.stateDirs {
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err == nil && w.wd >= 0 && uint64(st.Dev) == w.dev && st.Ino == w.ino {
			continue
		}
		replaced, lost = true, lost || w.wd >= 0
		if w.wd >= 0 {
			unix.InotifyRmWatch(v.ino, uint32(w.wd))
			delete(v.wds, w.wd)
		}
		nw, err := v.watchStateDir(path)
		if err == nil {
			v.wds[nw.wd] = ""
		} else {
			v.nextCheck.Store(0) // missing, or not watchable: look again on next use
		}
		v.stateDirs[path] = nw
	}
	if replaced {
		if lost {
			v.r.log.Warn("pod view: a pod state directory was replaced or removed; reading the pods again")
		}
		v.rescan++
		for uuid := range v.pods {
			v.invalidateLocked(uuid, false)
		}
	}
}

// close stops the loop and releases the descriptors.
func (v *podView) close() {
	if v.stop >= 0 {
		unix.Write(v.stop, []byte{1, 0, 0, 0, 0, 0, 0, 0})
		return // the loop closes everything
	}
	v.closeFDs()
}

func (v *podView) closeFDs() {
	v.mu.Lock()
	defer v.mu.Unlock()
	for fd := range v.pidfds {
		unix.Close(fd)
	}
	v.pidfds = map[int]string{}
	for _, fd := range []int{v.ino, v.ep, v.stop} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// loop applies inotify events and supervisor deaths until close.
func (v *podView) loop() {
	defer v.closeFDs()
	evs := make([]unix.EpollEvent, 64)
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.EpollWait(v.ep, evs, -1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			v.r.log.Warn("pod view: epoll failed; reading pods from disk from now on", "error", err)
			v.mu.Lock()
			for _, e := range v.pods {
				e.uncached, e.st = true, nil
			}
			v.gen.Add(1)
			v.mu.Unlock()
			return
		}
		for _, ev := range evs[:n] {
			switch int(ev.Fd) {
			case v.stop:
				return
			case v.ino:
				v.readInotify(buf)
			default:
				v.supervisorExited(int(ev.Fd))
			}
		}
	}
}

func (v *podView) readInotify(buf []byte) {
	for {
		n, err := unix.Read(v.ino, buf)
		if n <= 0 || err != nil {
			return
		}
		v.mu.Lock()
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := ""
			if ev.Len > 0 {
				name = strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				v.rescan++
				for uuid := range v.pods {
					v.invalidateLocked(uuid, false)
				}
				continue
			}
			uuid, ok := v.wds[ev.Wd]
			if ev.Mask&unix.IN_IGNORED != 0 {
				delete(v.wds, ev.Wd)
			}
			if !ok {
				continue
			}
			if uuid == "" { // a state directory: name is a pod
				if schema.IsUUID(name) {
					v.invalidateLocked(name, true)
				}
				if ev.Mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
					v.nextCheck.Store(0) // removed, moved or unmounted: checked on next use
					v.gen.Add(1)
				}
				continue
			}
			v.invalidateLocked(uuid, false)
		}
		v.mu.Unlock()
	}
}

// supervisorExited invalidates the pod whose supervisor's pidfd fired.
func (v *podView) supervisorExited(fd int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	uuid, ok := v.pidfds[fd]
	if !ok {
		return
	}
	v.dropPidfdLocked(fd)
	if e := v.pods[uuid]; e != nil && e.pidfd == fd {
		e.pidfd = -1
	}
	v.invalidateLocked(uuid, false)
}

func (v *podView) dropPidfdLocked(fd int) {
	unix.EpollCtl(v.ep, unix.EPOLL_CTL_DEL, fd, nil)
	unix.Close(fd)
	delete(v.pidfds, fd)
}

// invalidateLocked forgets what is known of a pod; add makes an entry for
// a pod the view does not know yet.
func (v *podView) invalidateLocked(uuid string, add bool) {
	e := v.pods[uuid]
	if e == nil {
		if !add {
			return
		}
		e = &viewEntry{pidfd: -1}
		v.pods[uuid] = e
	}
	e.gen++
	e.st = nil // the specs are checked against their files on next use
	v.gen.Add(1)
}

// changed invalidates the pods whose UUID starts with prefix (a call of
// this Runtime changed one); a full UUID the view does not know is added.
func (v *podView) changed(prefix string) {
	prefix = strings.ToLower(strings.TrimSpace(prefix))
	if prefix == "" {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if schema.IsUUID(prefix) {
		v.invalidateLocked(prefix, true)
		return
	}
	for uuid := range v.pods {
		if strings.HasPrefix(uuid, prefix) {
			v.invalidateLocked(uuid, false)
		}
	}
}

// changedAll invalidates every pod (GC).
func (v *podView) changedAll() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.rescan++
	for uuid := range v.pods {
		v.invalidateLocked(uuid, false)
	}
}

// scan adds the pods on disk the view does not know (at start and after
// lost events). Until a scan completes, every caller scans: one that found
// a scan in progress must not answer without the pods it has not added
// yet (nor wait for it: the stats loop's thread is niced).
func (v *podView) scan() error {
	v.mu.Lock()
	want := v.rescan
	if v.scanned == want {
		v.mu.Unlock()
		return nil
	}
	v.mu.Unlock()
	if v.scanning != nil {
		v.scanning()
	}
	pods, err := v.r.allPods()
	if err != nil {
		return err
	}
	v.mu.Lock()
	for _, p := range pods {
		if v.pods[p.uuid] == nil {
			v.invalidateLocked(p.uuid, true)
		}
	}
	v.scanned = max(v.scanned, want)
	v.mu.Unlock()
	return nil
}

// resolve expands a UUID prefix among the pods the view knows; "" when
// none matches.
func (v *podView) resolve(prefix string) (string, error) {
	prefix = strings.ToLower(strings.TrimSpace(prefix))
	if prefix == "" {
		return "", fmt.Errorf("empty pod UUID: %w", ErrInvalid)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.pods[prefix] != nil {
		return prefix, nil
	}
	var match []string
	for uuid := range v.pods {
		if strings.HasPrefix(uuid, prefix) {
			match = append(match, uuid)
		}
	}
	switch len(match) {
	case 0:
		return "", nil
	case 1:
		return match[0], nil
	}
	return "", fmt.Errorf("pod %q matches %d pods: %w", prefix, len(match), ErrAmbiguousUUID)
}

// locate finds the directory of a pod by its full UUID, in lifecycle
// order as allPods does.
func (r *Runtime) locate(uuid string) *pod {
	for _, s := range podStateDirs {
		p := r.podAt(s, uuid)
		if fi, err := os.Stat(p.dir); err == nil && fi.IsDir() && !isLegacyPod(p.dir) {
			return p
		}
	}
	return nil
}

// status returns a pod's status from the view, reading it from disk when
// it is not known or may have changed; ErrPodNotFound when it is gone.
func (v *podView) status(uuid string) (*PodStatus, error) {
	st, _, err := v.statusKept(uuid)
	return st, err
}

// statusKept is status; kept tells whether the answer is in the view (it
// stays the answer until the generation changes).
func (v *podView) statusKept(uuid string) (st *PodStatus, kept bool, err error) {
	v.mu.Lock()
	e := v.pods[uuid]
	if e == nil {
		e = &viewEntry{pidfd: -1}
		v.pods[uuid] = e
	}
	if e.st != nil {
		st := e.st
		v.mu.Unlock()
		return st, true, nil
	}
	gen := e.gen
	v.mu.Unlock()

	p := v.r.locate(uuid)
	if p == nil {
		v.mu.Lock()
		if e.gen == gen && v.pods[uuid] == e {
			v.forgetLocked(uuid, e)
		}
		v.mu.Unlock()
		return nil, false, fmt.Errorf("pod %s: %w", uuid, ErrPodNotFound)
	}
	cacheable := !e.uncached && (p.state == dirPrepared || p.state == dirRun || p.state == dirExitedGarbage)
	if cacheable {
		// watch before reading: a change after this is an event
		if err := v.watchPod(p); err != nil {
			v.r.log.Warn("pod view: cannot watch a pod; reading it from disk on each call", "pod", uuid, "error", err)
			v.mu.Lock()
			e.uncached = true
			v.mu.Unlock()
			cacheable = false
		}
	}
	st, err = v.r.podStatus(p)
	if err != nil {
		return nil, false, err
	}
	if !cacheable || st.Dir != p.dir {
		return st, false, nil // moved while read: read again next time
	}
	pidfd := -1
	if st.State == PodRunning {
		if st.Stage1PID <= 0 {
			return st, false, nil // stage1 starting: it writes stage1.pid
		}
		if pidfd, err = unix.PidfdOpen(st.Stage1PID, 0); err != nil {
			return st, false, nil
		}
		if !supervisorAlive(p, st.Stage1PID) { // died, or the pid is another's
			unix.Close(pidfd)
			return st, false, nil
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if e.gen != gen || v.pods[uuid] != e {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		return st, false, nil
	}
	if pidfd >= 0 {
		if e.pidfd >= 0 {
			v.dropPidfdLocked(e.pidfd)
		}
		if err := unix.EpollCtl(v.ep, unix.EPOLL_CTL_ADD, pidfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(pidfd)}); err != nil {
			unix.Close(pidfd)
			return st, false, nil
		}
		e.pidfd = pidfd
		v.pidfds[pidfd] = uuid
	}
	e.st = st
	for app := range e.specs { // of apps removed since
		if findAppStatus(st, app) == nil {
			delete(e.specs, app)
		}
	}
	return st, true, nil
}

// forgetLocked drops a pod that is gone.
func (v *podView) forgetLocked(uuid string, e *viewEntry) {
	if e.pidfd >= 0 {
		v.dropPidfdLocked(e.pidfd)
	}
	delete(v.pods, uuid)
	v.gen.Add(1)
}

// watchPod watches the directories holding a pod's state files.
func (v *podView) watchPod(p *pod) error {
	dirs := []string{p.dir, p.layout().AppsDir()}
	if ents, err := os.ReadDir(dirs[1]); err == nil {
		for _, e := range ents {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(dirs[1], e.Name()))
			}
		}
	}
	for i, d := range dirs {
		wd, err := unix.InotifyAddWatch(v.ino, d, viewEvents)
		if err != nil {
			if i > 0 && errors.Is(err, unix.ENOENT) {
				continue // apps/ made later (an event on the pod dir), or an app removed
			}
			return fmt.Errorf("cannot watch %q: %w", d, err)
		}
		v.mu.Lock()
		v.wds[int32(wd)] = p.uuid
		v.mu.Unlock()
	}
	return nil
}

// list returns the status of every pod, in the order of allPods, and the
// generation it is the answer of (0 when some pods were read from disk
// and are read again on each call).
func (v *podView) list() ([]*PodStatus, uint64, error) {
	v.checkStateDirs()
	if err := v.scan(); err != nil {
		return nil, 0, err
	}
	gen := v.gen.Load()
	v.mu.Lock()
	uuids := make([]string, 0, len(v.pods))
	for uuid := range v.pods {
		uuids = append(uuids, uuid)
	}
	v.mu.Unlock()
	type keyed struct {
		order int
		st    *PodStatus
	}
	ks := make([]keyed, 0, len(uuids))
	for _, uuid := range uuids {
		st, kept, err := v.statusKept(uuid)
		if err != nil {
			if !errors.Is(err, ErrPodNotFound) {
				v.r.leaveOut(uuid, err)
				gen = 0 // read again next time
			}
			continue
		}
		if !kept {
			gen = 0
		}
		ks = append(ks, keyed{stateOrder(st.Dir), st})
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].order != ks[j].order {
			return ks[i].order < ks[j].order
		}
		return ks[i].st.UUID < ks[j].st.UUID
	})
	out := make([]*PodStatus, len(ks))
	for i, k := range ks {
		out[i] = k.st
	}
	return out, gen, nil
}

// stateOrder is the index of a pod directory's state in podStateDirs.
func stateOrder(dir string) int {
	s := filepath.Base(filepath.Dir(dir))
	for i, d := range podStateDirs {
		if d == s {
			return i
		}
	}
	return len(podStateDirs)
}

// keepSpec keeps the spec stage0 just wrote to path for an app (the first
// ContainerStatus of a new container then reads nothing); checked against
// its file on first use like any kept spec.
func (v *podView) keepSpec(uuid, app string, s *specs.Spec, path string) {
	id, err := statFileID(path)
	if err != nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	e := v.pods[uuid]
	if e == nil {
		e = &viewEntry{pidfd: -1}
		v.pods[uuid] = e
	}
	if e.specs == nil {
		e.specs = map[string]*keptSpec{}
	}
	e.specs[app] = &keptSpec{spec: s, file: id, gen: ^uint64(0)}
}

// appSpec returns an app's runtime spec, kept while the pod does not change
// and, after it changed, while the spec's file is the same. read reads the
// spec (and the identity of the file it read) from disk.
func (v *podView) appSpec(uuid, app string, read func() (*specs.Spec, fileID, error)) (*specs.Spec, error) {
	v.mu.Lock()
	e := v.pods[uuid]
	if e == nil {
		v.mu.Unlock()
		s, _, err := read()
		return s, err
	}
	gen, st, k := e.gen, e.st, e.specs[app]
	current := k != nil && k.gen == gen
	v.mu.Unlock()
	if k != nil && st != nil {
		if current {
			return k.spec, nil
		}
		// the pod changed: is the spec still the one in its file?
		if app != "" {
			if id, err := statFileID(schema.PodDir(st.Dir).App(app).Spec()); err == nil && id == k.file {
				v.mu.Lock()
				if e.gen == gen && e.specs[app] == k {
					k.gen = gen
				}
				v.mu.Unlock()
				return k.spec, nil
			}
		}
	}
	s, id, err := read()
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil {
		if e.specs[app] == k {
			delete(e.specs, app)
		}
		return nil, err
	}
	if e.gen == gen && e.st != nil && !e.uncached && v.pods[uuid] == e {
		if e.specs == nil {
			e.specs = map[string]*keptSpec{}
		}
		e.specs[app] = &keptSpec{spec: s, file: id, gen: gen}
	}
	return s, nil
}
