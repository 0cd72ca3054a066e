// Package confdir reads rkt's configuration directories (/etc/rkt/<kind>.d
// and the like), shared by the registry configuration and rkt 1.x's.
package confdir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// JSONFiles lists the .json files of dir (not directories), sorted; a
// missing dir has none.
func JSONFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read config directory %q: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		out = append(out, filepath.Join(dir, e.Name()))
	}
	sort.Strings(out)
	return out, nil
}

// MaxFileSize bounds a configuration file: they are a few hundred bytes.
const MaxFileSize = 1 << 20

// ErrNotRegular and ErrTooLarge refuse what is no configuration file.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("larger than 1 MiB")
)

// ReadFile reads a configuration file: a regular file (symlinks followed)
// of at most MaxFileSize bytes. A FIFO or a device is refused without
// blocking on it.
func ReadFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot read config file %q: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read config file %q: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("config file %q: %w (%s)", path, ErrNotRegular, fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read config file %q: %w", path, err)
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("config file %q: %w", path, ErrTooLarge)
	}
	return b, nil
}
