package stage0

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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
			pd := schema.PodDir(filepath.Join(dir, e.Name()))
			b, err := os.ReadFile(pd.Manifest())
			if err != nil {
				continue // a pod still being prepared has no manifest yet
			}
			var pm schema.PodManifest
			if err := json.Unmarshal(b, &pm); err != nil {
				continue
			}
			pd.DropRemovedApps(&pm)
			for _, a := range pm.Apps {
				inUse[a.Image.ID] = true
				if rec, err := readAppRecord(&pod{dir: filepath.Join(dir, e.Name())}, a.Name); err == nil {
					for _, img := range rec.ImageVolumes {
						inUse[img.ID] = true
					}
				}
			}
		}
	}
	return inUse, nil
}
