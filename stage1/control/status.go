package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/schema"
)

// StatusPath returns the path of an app's status file.
func StatusPath(podDir, app string) string {
	return filepath.Join(podDir, schema.AppsDir, app, schema.AppStatusFile)
}

// ReadAppStatus reads an app's status file. An app that has never been
// started has none: the error then satisfies errors.Is(err, fs.ErrNotExist).
func ReadAppStatus(podDir, app string) (*schema.AppStatus, error) {
	b, err := os.ReadFile(StatusPath(podDir, app))
	if err != nil {
		return nil, fmt.Errorf("cannot read status of app %q: %w", app, err)
	}
	var st schema.AppStatus
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("cannot parse status of app %q: %w", app, err)
	}
	return &st, nil
}

// ReadPodStatus reads the status files of every app directory of the pod,
// sorted by app name. Apps without a status file are skipped.
func ReadPodStatus(podDir string) ([]schema.AppStatus, error) {
	ents, err := os.ReadDir(filepath.Join(podDir, schema.AppsDir))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("cannot list apps of pod %q: %w", podDir, err)
	}
	var out []schema.AppStatus
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		st, err := ReadAppStatus(podDir, e.Name())
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// WriteAppStatus writes an app's status file atomically (temp file, fsync,
// rename). stage1 is its only writer while it runs.
func WriteAppStatus(podDir string, st *schema.AppStatus) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode status of app %q: %w", st.Name, err)
	}
	return fileperm.WriteFile(StatusPath(podDir, st.Name), b, fileperm.Shared)
}
