package stage0

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rkt/rkt/pkg/lock"
	"github.com/rkt/rkt/pkg/schema"
)

// rkt 1.x kept its pods in the same state directories (plus pods/embryo),
// each with an appsinfo/ directory, made first when it prepared one (its
// pod manifest is an appc PodManifest, which this rkt would misread). This
// rkt cannot run, stop or clean them up (their stage1 is systemd-nspawn),
// so it leaves them alone: listing, status, GC and image use pass over
// them.

// legacyEmbryoDir is where rkt 1.x made pods before preparing them.
const legacyEmbryoDir = "embryo"

// isLegacyPod reports whether the pod directory dir was made by rkt 1.x
// (one lstat: it runs for every pod a listing reads).
func isLegacyPod(dir string) bool {
	fi, err := os.Lstat(schema.PodDir(dir).Rkt1AppsInfo())
	return err == nil && fi.IsDir()
}

// LegacyPod is a pod directory of rkt 1.x.
type LegacyPod struct {
	UUID    string
	State   string   // its state directory: embryo, prepare, prepared, run, exited-garbage, garbage
	Dir     string   // the pod directory
	Running bool     // locked, as rkt 1.x keeps a running (or preparing) pod
	Apps    []string // "app (image)" from its pod manifest, if readable
}

// LegacyPods lists the pods rkt 1.x left in dataDir.
func LegacyPods(dataDir string) ([]LegacyPod, error) {
	var out []LegacyPod
	for _, s := range append([]string{legacyEmbryoDir}, podStateDirs...) {
		dir := filepath.Join(schema.PodsDir(dataDir), s)
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cannot list pods in %q: %w", dir, err)
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if !e.IsDir() || !schema.IsUUID(e.Name()) || (s != legacyEmbryoDir && !isLegacyPod(p)) {
				continue
			}
			lp := LegacyPod{UUID: e.Name(), State: s, Dir: p}
			lp.Running, _ = lock.IsLocked(p, lock.Dir)
			lp.Apps = legacyApps(p)
			out = append(out, lp)
		}
	}
	return out, nil
}

// legacyApps reads the apps of an appc pod manifest.
func legacyApps(dir string) []string {
	b, err := os.ReadFile(schema.PodDir(dir).Manifest())
	if err != nil {
		return nil
	}
	var pm struct {
		Apps []struct {
			Name  string `json:"name"`
			Image struct {
				Name string `json:"name"`
			} `json:"image"`
		} `json:"apps"`
	}
	if json.Unmarshal(b, &pm) != nil {
		return nil
	}
	var apps []string
	for _, a := range pm.Apps {
		apps = append(apps, fmt.Sprintf("%s (%s)", a.Name, a.Image.Name))
	}
	return apps
}

// legacyPodError says that a UUID names a pod of rkt 1.x, or nil.
func (r *Runtime) legacyPodError(prefix string) error {
	pods, err := LegacyPods(r.cfg.DataDir)
	if err != nil {
		return nil
	}
	for _, p := range pods {
		if len(prefix) <= len(p.UUID) && p.UUID[:len(prefix)] == prefix {
			return fmt.Errorf("pod %s was made by rkt 1.x, which this rkt neither runs nor removes (see `rkt migrate`): %w", p.UUID, ErrPodNotFound)
		}
	}
	return nil
}

// ErrLegacyPodRunning: a pod of rkt 1.x still runs, so its data stays.
var ErrLegacyPodRunning = errors.New("a pod of rkt 1.x is running")

// RemoveLegacyPods deletes the pods rkt 1.x left in dataDir (unmounting
// what is mounted below each first), its embryo/ directory and its locks/
// and tmp/ directories. It refuses while one of its pods runs.
func RemoveLegacyPods(dataDir string) error {
	pods, err := LegacyPods(dataDir)
	if err != nil {
		return err
	}
	for _, p := range pods {
		if p.Running {
			return fmt.Errorf("pod %s (%s) is locked by a running rkt 1.x pod or command; stop it first (machinectl poweroff rkt-%s): %w", p.UUID, p.Dir, p.UUID, ErrLegacyPodRunning)
		}
	}
	for _, p := range pods {
		if err := removePodDir(p.Dir); err != nil {
			return fmt.Errorf("cannot remove rkt 1.x pod %s: %w", p.UUID, err)
		}
	}
	for _, d := range []string{filepath.Join(schema.PodsDir(dataDir), legacyEmbryoDir), filepath.Join(dataDir, "locks"), filepath.Join(dataDir, "tmp")} {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("cannot remove rkt 1.x's %s: %w", d, err)
		}
	}
	return nil
}
