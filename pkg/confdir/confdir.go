// Package confdir reads rkt's configuration directories (/etc/rkt/<kind>.d
// and the like), shared by the registry configuration and rkt 1.x's.
package confdir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
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

// WritableByOthers describes, one line each, what of the configuration
// directory dir (itself, its sub-directories and their files, links
// followed) a user other than root may change: the owner is not root, or
// a group other than root's or anyone may write. Such a user sets what
// root's rkt reads there (its data directory in paths.d, registries and
// their credentials, networks), so is as trusted as root.
func WritableByOthers(dir string) []string {
	var out []string
	check := func(p string) bool {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return false
		}
		switch {
		case st.Uid != 0:
			out = append(out, fmt.Sprintf("%s is owned by uid %d, not root", p, st.Uid))
		case st.Mode&0o002 != 0:
			out = append(out, fmt.Sprintf("%s is writable by every user", p))
		case st.Mode&0o020 != 0 && st.Gid != 0:
			out = append(out, fmt.Sprintf("%s is writable by group %s", p, groupName(st.Gid)))
		}
		return st.Mode&unix.S_IFMT == unix.S_IFDIR
	}
	if dir == "" || !check(dir) {
		return out
	}
	subs, _ := os.ReadDir(dir)
	for _, s := range subs {
		p := filepath.Join(dir, s.Name())
		if !check(p) {
			continue
		}
		files, _ := os.ReadDir(p)
		for _, f := range files {
			check(filepath.Join(p, f.Name()))
		}
	}
	return out
}

// groupName is "name (gid N)", or "gid N" when the group is unknown.
func groupName(gid uint32) string {
	id := strconv.FormatUint(uint64(gid), 10)
	if g, err := user.LookupGroupId(id); err == nil {
		return g.Name + " (gid " + id + ")"
	}
	return "gid " + id
}
