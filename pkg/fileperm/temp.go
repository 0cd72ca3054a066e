package fileperm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Atomic writes (WriteFile, WriteFileVolatile, Stage, and the callers of
// CreateTemp) write to a temporary file ".<name>.tmp<random digits>" beside
// the file they replace, then rename it. A writer killed in between leaves
// it: the garbage collection of each directory that may hold one removes
// it with RemoveStaleTemp.

// tempInfix separates a temporary file's target name from its random part.
const tempInfix = ".tmp"

// StaleTempAge is how long after its last write a temporary file is taken
// for abandoned. After that write its writer only chmods, syncs, closes and
// renames it; one stopped for longer has its rename fail (the file gone),
// and nothing partial takes the target's name.
const StaleTempAge = 10 * time.Minute

// CreateTemp creates a new temporary file (0600) beside path, for an
// atomic write to path.
func CreateTemp(path string) (*os.File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+tempInfix+"*")
	if err != nil {
		return nil, fmt.Errorf("cannot create a temporary file for %q: %w", path, err)
	}
	return f, nil
}

// IsTemp reports whether name is the name of a temporary file of
// CreateTemp.
func IsTemp(name string) bool {
	i := strings.LastIndex(name, tempInfix)
	if !strings.HasPrefix(name, ".") || i < 2 || i+len(tempInfix) == len(name) {
		return false
	}
	for _, c := range name[i+len(tempInfix):] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// RemoveStaleTemp removes the temporary files of dir (IsTemp, regular)
// last modified StaleTempAge ago or earlier. A missing dir holds none. dir
// keeps its modification time: the pods' GC counts their age from it.
func RemoveStaleTemp(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot list %q: %w", dir, err)
	}
	var (
		dirInfo fs.FileInfo
		removed bool
		errs    []error
	)
	for _, e := range entries {
		if !e.Type().IsRegular() || !IsTemp(e.Name()) {
			continue
		}
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < StaleTempAge {
			continue // gone, or maybe still being written
		}
		if dirInfo == nil {
			if dirInfo, err = os.Stat(dir); err != nil {
				return fmt.Errorf("cannot stat %q: %w", dir, err)
			}
		}
		p := filepath.Join(dir, e.Name())
		if err := os.Remove(p); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("cannot remove stale temporary file %q: %w", p, err))
			}
			continue
		}
		removed = true
	}
	if removed {
		if err := os.Chtimes(dir, time.Time{}, dirInfo.ModTime()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("cannot restore the modification time of %q: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}
