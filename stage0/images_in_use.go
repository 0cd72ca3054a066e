package stage0

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/rkt/rkt/pkg/schema"
)

// Pod state directories under <data dir>/pods, in lifecycle order.
var podStateDirs = []string{dirPrepare, dirPrepared, dirRun, dirExitedGarbage, dirGarbage}

// ImagesInUse returns the IDs of images referenced by any pod in dataDir
// (in whatever state), so the store can refuse to remove them.
func ImagesInUse(dataDir string) (map[string]bool, error) {
	inUse := map[string]bool{}
	for _, state := range podStateDirs {
		dir := filepath.Join(schema.PodsDir(dataDir), state)
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cannot list pods: %w", err)
		}
		for _, e := range entries {
			if isLegacyPod(filepath.Join(dir, e.Name())) {
				continue // rkt 1.x's ACIs are not in this store
			}
			addPodImages(schema.PodDir(filepath.Join(dir, e.Name())), inUse)
		}
	}
	return inUse, nil
}

// addPodImages adds the images a pod directory's manifest and app records
// name to inUse. The manifest is read without its version check, so that
// a pod kept for a newer rkt (which lists leave out) keeps its images.
func addPodImages(pd schema.PodDir, inUse map[string]bool) {
	b, err := os.ReadFile(pd.Manifest())
	if err != nil {
		return // a pod still being prepared has no manifest yet
	}
	var pm schema.PodManifest
	if err := json.Unmarshal(b, &pm); err != nil {
		return
	}
	pd.DropRemovedApps(&pm)
	for _, a := range pm.Apps {
		inUse[a.Image.ID] = true
		ids, _ := volumeImages(string(pd), a.Name)
		for _, id := range ids {
			inUse[id] = true
		}
	}
}

// appVolumeImages keeps the images of each app's image volumes, which are
// in its record: written before the app is listed and never changed (an
// app added again under the same name is a new one, of another CreatedAt).
type appVolumeImages struct {
	mu   sync.Mutex
	byID map[string][]string // "<pod uuid>/<app name>/<created, unix ns>" -> image IDs
}

// imagesInUse is ImagesInUse from the view's pods: each app's record is
// read once, when the app is first seen. The pods the list leaves out
// (unreadable, a newer rkt's) are read from disk as ImagesInUse does.
func (v *podView) imagesInUse() (map[string]bool, error) {
	pods, _, err := v.list()
	if err != nil {
		return nil, err
	}
	inUse := map[string]bool{}
	listed := make(map[string]bool, len(pods))
	for _, ps := range pods {
		listed[ps.UUID] = true
	}
	v.mu.Lock()
	var leftOut []string
	for uuid := range v.pods {
		if !listed[uuid] {
			leftOut = append(leftOut, uuid)
		}
	}
	v.mu.Unlock()
	for _, uuid := range leftOut {
		if p := v.r.locate(uuid); p != nil {
			addPodImages(schema.PodDir(p.dir), inUse)
		}
	}
	v.volumes.mu.Lock()
	defer v.volumes.mu.Unlock()
	seen := make(map[string][]string, len(v.volumes.byID))
	for _, ps := range pods {
		if ps.Manifest == nil {
			continue // an embryo
		}
		for _, a := range ps.Manifest.Apps {
			inUse[a.Image.ID] = true
			key := ps.UUID + "/" + a.Name + "/" + strconv.FormatInt(a.CreatedAt.UnixNano(), 10)
			ids, ok := v.volumes.byID[key]
			if !ok {
				var err error
				if ids, err = volumeImages(ps.Dir, a.Name); err != nil {
					continue // the pod moved or is going: read again next time
				}
			}
			seen[key] = ids
			for _, id := range ids {
				inUse[id] = true
			}
		}
	}
	v.volumes.byID = seen // apps gone are forgotten
	return inUse, nil
}

// volumeImages returns the IDs of the images of the image volumes of app
// in the pod directory dir, from its record.
func volumeImages(dir, app string) ([]string, error) {
	rec, err := readAppRecord(&pod{dir: dir}, app)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, img := range rec.ImageVolumes {
		ids = append(ids, img.ID)
	}
	return ids, nil
}
