package stage0

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/rkt/rkt/networking"
	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/lock"
	"github.com/rkt/rkt/pkg/schema"
)

// newPodPrefix names a pod directory being created, before it is renamed
// to its UUID.
const newPodPrefix = ".new-"

// manifestLockFile serializes changes of the pod manifest (apps added and
// removed while stage1 holds the pod lock).
const manifestLockFile = "manifest.lock"

// appRecord is what stage0 keeps about an app besides the manifest.
type appRecord struct {
	Options      AppOptions    `json:"options"`
	Image        Image         `json:"image"`
	ImageVolumes map[int]Image `json:"imageVolumes,omitempty"` // by index in Options.Mounts
}

// validAppName reports whether name is an app name: 1 to 253 of
// [A-Za-z0-9_.-], the first alphanumeric. (Not a regexp: its bounded
// repetition compiled to ~180 KiB of heap in every rkt process.)
func validAppName(name string) bool {
	if len(name) == 0 || len(name) > 253 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !alnum && (i == 0 || c != '_' && c != '.' && c != '-') {
			return false
		}
	}
	return true
}

// createPod makes a new pod directory in prepare/, locked, with its
// manifest (no apps yet).
func (r *Runtime) createPod(opts PodOptions) (*pod, *lock.FileLock, *schema.PodManifest, error) {
	if err := r.ensureDirs(); err != nil {
		return nil, nil, nil, err
	}
	uuid := strings.ToLower(opts.UUID)
	if uuid == "" {
		var err error
		if uuid, err = NewUUID(); err != nil {
			return nil, nil, nil, err
		}
	} else if !schema.IsUUID(uuid) {
		return nil, nil, nil, fmt.Errorf("invalid pod UUID %q: %w", opts.UUID, ErrInvalid)
	}
	if _, err := r.findPod(uuid); err == nil {
		return nil, nil, nil, fmt.Errorf("pod %s already exists: %w", uuid, ErrInvalid)
	}
	if err := checkNet(opts); err != nil {
		return nil, nil, nil, err
	}
	if err := checkCgroupParent(opts, SystemdRunning()); err != nil {
		return nil, nil, nil, err
	}
	// Create and lock the directory under a name GC ignores, then rename it
	// into place, so that nobody sees it unlocked.
	p := r.podAt(dirPrepare, uuid)
	tmp := filepath.Join(r.stateDir(dirPrepare), newPodPrefix+uuid)
	if err := fileperm.Mkdir(tmp, fileperm.Shared); err != nil {
		return nil, nil, nil, err
	}
	l, err := lock.TryExclusive(tmp, lock.Dir)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, nil, fmt.Errorf("cannot lock new pod %s: %w", uuid, err)
	}
	if err := os.Rename(tmp, p.dir); err != nil {
		l.Close()
		os.RemoveAll(tmp)
		return nil, nil, nil, fmt.Errorf("cannot create pod directory: %w", err)
	}
	hostname := opts.Hostname
	if hostname == "" {
		hostname = "rkt-" + uuid
	}
	cgParent := opts.CgroupParent
	if cgParent == "" {
		cgParent = r.cfg.CgroupParent
	}
	net := opts.Net
	if net == "" {
		net = networking.NetDefault
	}
	pm := &schema.PodManifest{
		Version:      schema.Version,
		UUID:         uuid,
		Apps:         []schema.App{},
		Hostname:     hostname,
		DNS:          opts.DNS,
		Net:          net,
		Ports:        opts.Ports,
		Volumes:      opts.Volumes,
		SharedPID:    opts.SharedPID,
		HostPID:      opts.HostPID,
		HostIPC:      opts.HostIPC,
		SharedShm:    !opts.HostIPC,
		Sysctls:      opts.Sysctls,
		CgroupParent: cgParent,
		// a default parent is shared
		OwnCgroupParent: opts.OwnCgroupParent && opts.CgroupParent != "",
		Resources:       opts.Resources,
		Annotations:     copyMap(opts.Annotations),
		UserNS:          opts.UserNS,
		CreatedAt:       time.Now().UTC(),
	}
	if err := fileperm.Mkdir(p.layout().AppsDir(), fileperm.Shared); err != nil {
		l.Close()
		os.RemoveAll(p.dir)
		return nil, nil, nil, fmt.Errorf("cannot create apps directory of pod %s: %w", uuid, err)
	}
	if pm.SharedShm {
		// the mount point of the pod's /dev/shm (mounted at its start), in
		// a directory of root's: the tmpfs is open to all (1777)
		err := fileperm.Mkdir(p.layout().ShmDir(), fileperm.Private)
		if err == nil {
			err = fileperm.Mkdir(p.layout().Shm(), fileperm.Private)
		}
		if err != nil {
			l.Close()
			os.RemoveAll(p.dir)
			return nil, nil, nil, fmt.Errorf("cannot create the /dev/shm of pod %s: %w", uuid, err)
		}
	}
	if err := p.writeManifest(pm); err != nil {
		l.Close()
		os.RemoveAll(p.dir)
		return nil, nil, nil, err
	}
	return p, l, pm, nil
}

func checkNet(opts PodOptions) error {
	if err := CheckUserNS(opts.UserNS); err != nil {
		return err
	}
	for _, v := range opts.Volumes {
		if !validAppName(v.Name) {
			return fmt.Errorf("invalid volume name %q: %w", v.Name, ErrInvalid)
		}
	}
	if opts.Net == networking.NetHost && opts.SharedPID && opts.HostPID {
		return fmt.Errorf("a pod cannot have both a shared and the host PID namespace: %w", ErrInvalid)
	}
	return nil
}

// checkCgroupParent refuses, with the systemd driver (systemd), a pod's
// own cgroup parent (the kubelet's per-pod cgroup) that is not a slice:
// stage1 would put the apps' scopes in system.slice, out of the pod's and
// its QoS class's limits (a kubelet on the cgroupfs driver, where rkt's
// RuntimeConfig says systemd; CRI-O refuses it too). A shared or default
// parent (rkt run's /rkt) keeps system.slice.
func checkCgroupParent(opts PodOptions, systemd bool) error {
	if !systemd || !opts.OwnCgroupParent || opts.CgroupParent == "" {
		return nil
	}
	if _, err := expandSlice(path.Base(opts.CgroupParent)); err != nil {
		return fmt.Errorf("cgroup parent %q is not a systemd slice, and the pods' cgroups are systemd's here (a kubelet must use the systemd cgroup driver): %w", opts.CgroupParent, ErrInvalid)
	}
	return nil
}

// defaultAppName derives an app name from an image name:
// docker.io/library/busybox:latest -> busybox.
func defaultAppName(image string) string {
	n := image
	if i := strings.LastIndex(n, "/"); i >= 0 {
		n = n[i+1:]
	}
	if i := strings.IndexAny(n, ":@"); i >= 0 {
		n = n[:i]
	}
	n = strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
			return c
		}
		return '-'
	}, n)
	n = strings.TrimLeft(n, "-_.")
	if n == "" {
		n = "app"
	}
	return n
}

// addAppRecord resolves the app's image, creates its directory, records it
// and appends it to the manifest. The caller holds the manifest lock.
func (r *Runtime) addAppRecord(ctx context.Context, p *pod, opts AppOptions) (*schema.PodManifest, string, error) {
	na, err := r.newAppRecord(ctx, p, opts)
	if err != nil {
		return nil, "", err
	}
	defer na.release()
	if err := na.commit(p, true); err != nil {
		os.RemoveAll(string(p.appDir(na.app.Name)))
		return nil, "", err
	}
	return na.pm, na.app.Name, nil
}

// newApp is an app being added: its directory exists, its files are not
// written yet.
type newApp struct {
	rec  appRecord
	app  schema.App
	pm   *schema.PodManifest // the pod's manifest, with the app
	hold io.Closer           // the images' layers, until release
}

// release lets the app's images go once the pod manifest lists it (or it
// was not added).
func (na *newApp) release() { na.hold.Close() }

// newAppRecord resolves the app's image, checks its name and creates its
// directory. The caller holds the manifest lock, and releases the images
// (newApp.release) after the commit.
func (r *Runtime) newAppRecord(ctx context.Context, p *pod, opts AppOptions) (_ *newApp, retErr error) {
	if r.cfg.Images == nil {
		return nil, errors.New("stage0: no image source configured")
	}
	if opts.Image == "" {
		return nil, fmt.Errorf("app %q: no image given: %w", opts.Name, ErrInvalid)
	}
	hold, err := r.cfg.Images.Hold(ctx)
	if err != nil {
		return nil, fmt.Errorf("app %q: %w", opts.Name, err)
	}
	defer func() {
		if retErr != nil {
			hold.Close()
		}
	}()
	img, err := r.cfg.Images.AppImage(ctx, opts.Image)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve image %q: %w", opts.Image, err)
	}
	imgVols, err := r.resolveImageMounts(ctx, opts)
	if err != nil {
		return nil, err
	}
	stopSignal, err := appStopSignal(opts.StopSignal, img)
	if err != nil {
		return nil, fmt.Errorf("app %q: %w", opts.Name, err)
	}
	pm, err := p.lockedManifest()
	if err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		base := defaultAppName(img.Name)
		name = base
		for i := 2; appIndex(pm, name) >= 0; i++ {
			name = fmt.Sprintf("%s-%d", base, i)
		}
	}
	if !validAppName(name) {
		return nil, fmt.Errorf("invalid app name %q: %w", name, ErrInvalid)
	}
	if appIndex(pm, name) >= 0 {
		return nil, fmt.Errorf("app %q in pod %s: %w", name, p.uuid, ErrAppExists)
	}
	opts.Name = name
	appDir := p.appDir(name)
	dir := string(appDir)
	if _, err := os.Lstat(dir); err == nil {
		// not in the manifest: debris of an AddApp that was interrupted
		if err := removePodDir(dir); err != nil {
			return nil, fmt.Errorf("cannot clean up an interrupted add of app %q: %w", name, err)
		}
	}
	if err := os.Mkdir(dir, fileperm.Shared.DirMode()); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("app %q in pod %s: %w", name, p.uuid, ErrAppExists)
		}
		return nil, fmt.Errorf("cannot create app directory: %w", err)
	}
	if err := fileperm.Apply(dir, fileperm.Shared); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	na := &newApp{rec: appRecord{Options: opts, Image: *img, ImageVolumes: imgVols}, hold: hold}
	na.app = schema.App{
		Name:        name,
		Image:       schema.AppImage{Name: img.Name, ID: img.ID, Layers: img.Layers},
		Annotations: copyMap(opts.Annotations),
		LogPath:     opts.LogPath,
		Stdin:       opts.Stdin,
		StdinOnce:   opts.StdinOnce,
		TTY:         opts.TTY,
		StopSignal:  stopSignal,
		CreatedAt:   time.Now().UTC(),
	}
	pm.Apps = append(pm.Apps, na.app)
	na.pm = pm
	return na, nil
}

// commit writes the app's record, then the pod manifest that lists it, so
// that the app is never listed before its record is written, nor before
// its directory's entry is durable (a listed app without its directory
// counts as removed: schema.PodDir.DropRemovedApps). The pod manifest is
// staged (written and synced under a temporary name), apps/ synced, then
// the manifest put in place and the pod directory synced.
//
// With durableRecord the record is staged too, and put in place and its
// directory synced before apps/: a prepared pod's apps are materialized
// from their records when it starts, which may be after a reboot. An app
// added to a running pod is not: after a power loss the pod is gone, and
// the record (like the spec, materializeRecord) is only read while it runs,
// so it is written atomically but not synced.
//
// The syncs run one after the other: syncs run at once would each hold an
// OS thread of the service, whose count must not grow with concurrent
// calls. The caller removes the app directory on error.
func (na *newApp) commit(p *pod, durableRecord bool) error {
	appDir := p.appDir(na.app.Name)
	var rec *fileperm.Staged
	if durableRecord {
		var err error
		if rec, err = stageJSON(appDir.Record(), &na.rec, fileperm.Private); err != nil {
			return fmt.Errorf("cannot record app %q: %w", na.app.Name, err)
		}
		defer rec.Discard()
	} else if err := writeJSON(appDir.Record(), &na.rec, fileperm.Private, false); err != nil {
		return fmt.Errorf("cannot record app %q: %w", na.app.Name, err)
	}
	pm, err := stageJSON(p.layout().Manifest(), na.pm, fileperm.Shared)
	if err != nil {
		return fmt.Errorf("cannot write the manifest of pod %s: %w", p.uuid, err)
	}
	defer pm.Discard()
	if rec != nil {
		if err := rec.Install(); err != nil {
			return err
		}
		if err := fileperm.SyncDir(string(appDir)); err != nil {
			return err
		}
	}
	// the app directory's own entry, made by newAppRecord
	if err := fileperm.SyncDir(p.layout().AppsDir()); err != nil {
		return err
	}
	if err := pm.Install(); err != nil {
		return err
	}
	return fileperm.SyncDir(p.dir)
}

// stageJSON stages v, encoded as writeJSONAtomic would write it to path.
func stageJSON(path string, v any, c fileperm.Class) (*fileperm.Staged, error) {
	b, err := encodeJSON(path, v)
	if err != nil {
		return nil, err
	}
	return fileperm.Stage(path, b, c)
}

func appIndex(pm *schema.PodManifest, name string) int {
	for i, a := range pm.Apps {
		if a.Name == name {
			return i
		}
	}
	return -1
}

func readAppRecord(p *pod, name string) (*appRecord, error) {
	b, err := os.ReadFile(p.appDir(name).Record())
	if err != nil {
		return nil, fmt.Errorf("cannot read the record of app %q: %w", name, err)
	}
	var rec appRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("cannot parse the record of app %q: %w", name, err)
	}
	return &rec, nil
}

// lockManifest serializes manifest changes of a pod. A removal's
// background rewrite of the manifest holds the lock after its call
// returned: the next change waits for it here rather than in the lock's
// 5 ms polls.
func (r *Runtime) lockManifest(ctx context.Context, p *pod) (*lock.FileLock, error) {
	if done := r.removals.rewriting(p.uuid); done != nil {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	return lock.Exclusive(ctx, filepath.Join(p.dir, manifestLockFile), lock.RegFile)
}
