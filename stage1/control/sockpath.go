package control

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// maxSunPath is the usable length of a unix socket path (sun_path is 108
// bytes with its terminating NUL).
const maxSunPath = 107

// ShortSocketPath returns a path usable for bind/connect of the unix socket
// at path: path itself when it fits in sun_path, else
// /proc/self/fd/<dir fd>/<name> through a descriptor of its directory, which release closes. Deep data directories then still work.
func ShortSocketPath(path string) (short string, release func(), err error) {
	if len(path) <= maxSunPath {
		return path, func() {}, nil
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return "", nil, fmt.Errorf("cannot open the directory of socket %q: %w", path, err)
	}
	short = "/proc/self/fd/" + strconv.Itoa(int(dir.Fd())) + "/" + filepath.Base(path)
	if len(short) > maxSunPath {
		dir.Close()
		return "", nil, fmt.Errorf("socket name %q is too long", filepath.Base(path))
	}
	return short, func() { dir.Close() }, nil
}
