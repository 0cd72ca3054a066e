package stage0

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/lock"
	"github.com/rkt/rkt/pkg/schema"
)

// Pod state directories under <data dir>/pods.
const (
	dirPrepare       = "prepare"
	dirPrepared      = "prepared"
	dirRun           = "run"
	dirExitedGarbage = "exited-garbage"
	dirGarbage       = "garbage"
)

// pod is a pod directory found on disk at one moment. Pods move between
// state directories by rename, so dir may be stale: callers that need a
// stable view take the pod's lock and re-find it.
type pod struct {
	uuid  string
	state string // state directory name
	dir   string // <data>/pods/<state>/<uuid>
}

// NewUUID returns a random (version 4) UUID, as pods get: the CRI names
// sandboxes by it before creating them.
func NewUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("cannot generate a pod UUID: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

func (r *Runtime) podsDir() string { return schema.PodsDir(r.cfg.DataDir) }

func (r *Runtime) stateDir(state string) string { return filepath.Join(r.podsDir(), state) }

func (r *Runtime) podAt(state, uuid string) *pod {
	return &pod{uuid: uuid, state: state, dir: filepath.Join(r.stateDir(state), uuid)}
}

// ensureDirs creates the data directory and the pod state directories.
func (r *Runtime) ensureDirs() error {
	if err := fileperm.MkdirAll(r.cfg.DataDir, fileperm.Traversable); err != nil {
		return err
	}
	for _, d := range append([]string{r.podsDir()}, podStateDirs...) {
		if d != r.podsDir() {
			d = r.stateDir(d)
		}
		if err := fileperm.Mkdir(d, fileperm.Traversable); err != nil {
			return fmt.Errorf("cannot create pod state directory: %w", err)
		}
	}
	return nil
}

// allPods lists every pod directory, in lifecycle order of the states.
func (r *Runtime) allPods() ([]*pod, error) {
	var pods []*pod
	seen := map[string]bool{}
	for _, s := range podStateDirs {
		entries, err := os.ReadDir(r.stateDir(s))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cannot list pods in %q: %w", r.stateDir(s), err)
		}
		for _, e := range entries {
			// a pod being moved may show up twice: keep its first sighting
			if !e.IsDir() || !schema.IsUUID(e.Name()) || seen[e.Name()] {
				continue
			}
			if isLegacyPod(filepath.Join(r.stateDir(s), e.Name())) {
				continue // rkt 1.x's: see legacy_pods.go
			}
			seen[e.Name()] = true
			pods = append(pods, r.podAt(s, e.Name()))
		}
	}
	return pods, nil
}

// findPod resolves a UUID or unique UUID prefix to the pod's current
// location.
func (r *Runtime) findPod(prefix string) (*pod, error) {
	prefix = strings.ToLower(strings.TrimSpace(prefix))
	if prefix == "" {
		return nil, fmt.Errorf("empty pod UUID: %w", ErrInvalid)
	}
	if r.view != nil {
		// the view knows the UUIDs; where the pod is now, the disk says.
		// Not known, or ambiguous (one may be gone): scan the disk.
		if uuid, err := r.view.resolve(prefix); err == nil && uuid != "" {
			if p := r.locate(uuid); p != nil {
				return p, nil
			}
		}
	}
	// Retry: a pod renamed between two ReadDirs can be missed once.
	for attempt := 0; attempt < 3; attempt++ {
		pods, err := r.allPods()
		if err != nil {
			return nil, err
		}
		var match []*pod
		for _, p := range pods {
			if p.uuid == prefix {
				return p, nil
			}
			if strings.HasPrefix(p.uuid, prefix) {
				match = append(match, p)
			}
		}
		if len(match) == 1 {
			return match[0], nil
		}
		if len(match) > 1 {
			return nil, fmt.Errorf("pod %q matches %d pods: %w", prefix, len(match), ErrAmbiguousUUID)
		}
	}
	if err := r.legacyPodError(prefix); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("pod %q: %w", prefix, ErrPodNotFound)
}

// findPodState resolves a UUID or unique prefix and reads the pod's state.
func (r *Runtime) findPodState(uuid string) (*pod, PodState, error) {
	p, err := r.findPod(uuid)
	if err != nil {
		return nil, "", err
	}
	st, err := p.podState()
	if err != nil {
		return nil, "", err
	}
	return p, st, nil
}

// refind locates a pod again after it may have moved.
func (r *Runtime) refind(p *pod) (*pod, error) {
	if _, err := os.Stat(p.dir); err == nil {
		return p, nil
	}
	return r.findPod(p.uuid)
}

// syncStateDir makes the entries of a pod state directory durable
// (fileperm.SyncDir; a variable for tests).
var syncStateDir = fileperm.SyncDir

// move renames the pod into another state directory. A move into
// prepared/ is made durable (the destination state directory synced, then
// the source, which also makes createPod's rename of prepare/.new-<uuid>
// durable): a prepared pod that a power cut put back in prepare/ would be
// collected as an aborted prepare. The other moves need not outlive a
// power cut: after one, a pod in run/ is dead, and a move to a garbage
// state is made again by the next GC.
func (r *Runtime) move(p *pod, to string) error {
	r.waitRemovals(p.uuid) // their paths are in the pod directory
	dst := filepath.Join(r.stateDir(to), p.uuid)
	if err := os.Rename(p.dir, dst); err != nil {
		return fmt.Errorf("cannot move pod %s from %s to %s: %w", p.uuid, p.state, to, err)
	}
	from := p.state
	p.state, p.dir = to, dst
	if to != dirPrepared {
		return nil
	}
	for _, d := range []string{r.stateDir(to), r.stateDir(from)} {
		if err := syncStateDir(d); err != nil {
			return fmt.Errorf("cannot move pod %s from %s to %s durably: %w", p.uuid, from, to, err)
		}
	}
	return nil
}

// briefLockWait bounds the wait for a pod lock that only readers (status,
// list: short shared locks) may hold.
const briefLockWait = 2 * time.Second

// lockIdle takes the exclusive lock of a pod that is not running, waiting
// briefly for concurrent readers (List/Status take short shared locks).
func lockIdle(ctx context.Context, p *pod) (*lock.FileLock, error) {
	lctx, cancel := context.WithTimeout(ctx, briefLockWait)
	defer cancel()
	l, err := lock.Exclusive(lctx, p.dir, lock.Dir)
	if err != nil {
		return nil, fmt.Errorf("cannot lock pod %s (is it running or being changed?): %w", p.uuid, err)
	}
	return l, nil
}

// state derives the PodState from the directory and the lock.
func (p *pod) podState() (PodState, error) {
	locked, err := lock.IsLocked(p.dir, lock.Dir)
	if err != nil {
		return "", fmt.Errorf("cannot check the lock of pod %s: %w", p.uuid, err)
	}
	switch p.state {
	case dirPrepare:
		if locked {
			return PodPreparing, nil
		}
		return PodAbortedPrepare, nil
	case dirPrepared:
		return PodPrepared, nil
	case dirRun:
		// Locked and no supervisor pid yet: stage0 is starting it. Locked
		// while the recorded supervisor is dead: being stopped/cleaned up.
		if locked {
			if pid := stage1PID(p); pid > 0 && !supervisorAlive(p, pid) {
				return PodExited, nil
			}
			return PodRunning, nil
		}
		return PodExited, nil
	case dirExitedGarbage:
		return PodExitedGarbage, nil
	case dirGarbage:
		if locked {
			return PodDeleting, nil
		}
		return PodGarbage, nil
	}
	return "", fmt.Errorf("pod %s in unknown state directory %q", p.uuid, p.state)
}

// readManifest loads the pod manifest, without the apps it still lists
// after their removal (schema.PodDir.DropRemovedApps).
func (p *pod) readManifest() (*schema.PodManifest, error) {
	pm, _, err := p.loadManifest()
	return pm, err
}

// lockedManifest is readManifest for a change of the manifest, under its
// lock: a manifest that lists removed apps (a crash came between the
// removal and the rewrite) is rewritten without them first, so that no
// later app of the same name inherits their entries.
func (p *pod) lockedManifest() (*schema.PodManifest, error) {
	pm, stale, err := p.loadManifest()
	if err == nil && stale {
		err = p.writeManifest(pm)
	}
	return pm, err
}

// loadManifest is readManifest; stale reports removed apps it dropped.
func (p *pod) loadManifest() (pm *schema.PodManifest, stale bool, err error) {
	b, err := os.ReadFile(p.layout().Manifest())
	if err != nil {
		return nil, false, fmt.Errorf("cannot read the manifest of pod %s: %w", p.uuid, err)
	}
	pm = &schema.PodManifest{}
	if err := json.Unmarshal(b, pm); err != nil {
		return nil, false, fmt.Errorf("cannot parse the manifest of pod %s: %w", p.uuid, err)
	}
	if err := schema.CheckVersion(pm.Version); err != nil {
		return nil, false, fmt.Errorf("pod %s: %w", p.uuid, err)
	}
	return pm, p.layout().DropRemovedApps(pm), nil
}

// writeManifest replaces the pod manifest atomically.
func (p *pod) writeManifest(pm *schema.PodManifest) error {
	if err := writeJSONAtomic(p.layout().Manifest(), pm, fileperm.Shared); err != nil {
		return fmt.Errorf("cannot write the manifest of pod %s: %w", p.uuid, err)
	}
	return nil
}

// layout gives the paths of the pod directory's files.
func (p *pod) layout() schema.PodDir { return schema.PodDir(p.dir) }

func (p *pod) appDir(name string) schema.AppDir { return p.layout().App(name) }

// writeJSONAtomic writes v as JSON to path atomically, with class c.
// Small documents are indented for people; large ones (a CRI config with
// 100k env entries) stay compact, as indenting would double the cost.
func writeJSONAtomic(path string, v any, c fileperm.Class) error {
	return writeJSON(path, v, c, true)
}

// writeJSON is writeJSONAtomic, durable (fsync) or not.
func writeJSON(path string, v any, c fileperm.Class, durable bool) error {
	b, err := encodeJSON(path, v)
	if err != nil {
		return err
	}
	if !durable {
		return fileperm.WriteFileVolatile(path, b, c)
	}
	return fileperm.WriteFile(path, b, c)
}

// encodeJSON is the content writeJSONAtomic writes to path.
func encodeJSON(path string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cannot encode %q: %w", path, err)
	}
	if len(b) <= indentJSONMax {
		var buf bytes.Buffer
		if json.Indent(&buf, b, "", "  ") == nil {
			b = buf.Bytes()
		}
	}
	return append(b, '\n'), nil
}

// indentJSONMax is the size up to which writeJSONAtomic indents.
const indentJSONMax = 64 << 10
