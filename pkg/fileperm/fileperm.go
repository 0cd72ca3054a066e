// Package fileperm chooses the owner and mode of everything rkt creates
// under its data directory, per the threat model of
// Documentation/security.md: root and the rkt group are trusted, other
// local users are not. Callers name a Class; the bits live here only.
package fileperm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/buildinfo"
)

// Class is who may use a file or directory.
type Class int

const (
	// Shared is read by root and the rkt group (read-only CLI use): pod
	// directories and manifests, app status, the image index. 0750/0640,
	// owner root, group rkt.
	Shared Class = iota
	// Private is root's only: app rootfs and writable layers, unpacked
	// layers, OCI specs, network state, temporary files. 0700/0600.
	Private
	// Traversable directories may be passed through by anyone but listed
	// by root and the rkt group only (0751, root:rkt): the data directory
	// and the pod state directories, so that the apps of a user-namespaced
	// pod reach their own pod directory (which they are let into by ACL).
	Traversable
	// Public files are read by anyone who reaches them: a pod's hosts,
	// hostname and resolv.conf, bind-mounted into apps whose users are not
	// root. Their directory is what keeps outsiders away. 0755/0644.
	Public
)

// DirMode is the mode of a directory of class c.
func (c Class) DirMode() os.FileMode {
	switch c {
	case Shared:
		return 0o750
	case Traversable:
		return 0o751
	case Public:
		return 0o755
	}
	return 0o700
}

// FileMode is the mode of a file of class c.
func (c Class) FileMode() os.FileMode {
	switch c {
	case Shared, Traversable:
		return 0o640
	case Public:
		return 0o644
	}
	return 0o600
}

func (c Class) gid() int {
	if c == Shared || c == Traversable {
		return GID()
	}
	return 0
}

var (
	groupOnce sync.Once
	groupID   int
)

// GroupName is the rkt group: members may read rkt's state (and use the
// kubelet-service socket). Set at build time by --with-socket-group.
func GroupName() string { return buildinfo.SocketGroup }

// GID is the rkt group's ID, or 0 (root's group) when the group does not
// exist: then only root reads Shared files.
func GID() int {
	groupOnce.Do(func() {
		g, err := user.LookupGroup(GroupName())
		if err != nil {
			return
		}
		if id, err := strconv.Atoi(g.Gid); err == nil {
			groupID = id
		}
	})
	return groupID
}

// owned reports whether this process sets owners (only root can; tests and
// members of the group only read).
func owned() bool { return os.Geteuid() == 0 }

// Apply gives an existing path the owner and mode of class c, touching it
// only when they differ. Only root sets them: other users (members of the
// rkt group reading state) take what is there.
func Apply(path string, c Class) error {
	if !owned() {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fmt.Errorf("cannot stat %q: %w", path, err)
	}
	mode := c.FileMode()
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		mode = c.DirMode()
	}
	if st.Uid != 0 || int(st.Gid) != c.gid() {
		if err := unix.Lchown(path, 0, c.gid()); err != nil {
			return fmt.Errorf("cannot chown %q to 0:%d: %w", path, c.gid(), err)
		}
	}
	if os.FileMode(st.Mode&0o7777) != mode {
		if err := os.Chmod(path, mode); err != nil {
			return fmt.Errorf("cannot chmod %q to %#o: %w", path, mode, err)
		}
	}
	return nil
}

// Mkdir creates the directory path (its parent must exist) with class c,
// or gives an existing one that class.
func Mkdir(path string, c Class) error {
	if err := os.Mkdir(path, c.DirMode()); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("cannot create directory %q: %w", path, err)
	}
	return Apply(path, c)
}

// MkdirAll is Mkdir that first creates missing parents (as root-only
// 0755 directories, as os.MkdirAll would with a 022 umask).
func MkdirAll(path string, c Class) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return Apply(path, c)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("cannot create directory %q: %w", filepath.Dir(path), err)
	}
	return Mkdir(path, c)
}

// OpenFile opens path like os.OpenFile; a file it creates gets class c.
func OpenFile(path string, flag int, c Class) (*os.File, error) {
	f, err := os.OpenFile(path, flag, c.FileMode())
	if err != nil {
		return nil, err
	}
	if flag&os.O_CREATE != 0 {
		if err := SetFile(f, c); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// SetFile gives the open file f the owner and mode of class c.
func SetFile(f *os.File, c Class) error {
	if owned() {
		if err := f.Chown(0, c.gid()); err != nil {
			return fmt.Errorf("cannot chown %q: %w", f.Name(), err)
		}
	}
	if err := f.Chmod(c.FileMode()); err != nil {
		return fmt.Errorf("cannot chmod %q: %w", f.Name(), err)
	}
	return nil
}

// WriteFile replaces path with data atomically and durably (a synced
// temporary file renamed over it, then the directory synced); the file
// has class c.
func WriteFile(path string, data []byte, c Class) error {
	if err := replaceFile(path, data, c, true); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// WriteFileVolatile replaces path with data atomically but not durably (no
// fsync): for files that mean nothing after a reboot, such as a running
// pod's pid file or /etc/hosts. Readers see the old or the new content.
func WriteFileVolatile(path string, data []byte, c Class) error {
	return replaceFile(path, data, c, false)
}

func replaceFile(path string, data []byte, c Class, durable bool) error {
	tmp, err := writeTemp(path, data, c, durable)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot replace %q: %w", path, err)
	}
	return nil
}

// writeTemp writes data to a new temporary file beside path, with class c,
// synced if durable, and returns its name.
func writeTemp(path string, data []byte, c Class, durable bool) (_ string, retErr error) {
	tmp, err := CreateTemp(path)
	if err != nil {
		return "", err
	}
	defer func() {
		if retErr != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return "", fmt.Errorf("cannot write %q: %w", tmp.Name(), err)
	}
	if err := SetFile(tmp, c); err != nil {
		return "", err
	}
	if durable {
		if err := tmp.Sync(); err != nil {
			return "", fmt.Errorf("cannot sync %q: %w", tmp.Name(), err)
		}
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("cannot close %q: %w", tmp.Name(), err)
	}
	return tmp.Name(), nil
}

// Staged is the new content of a file, synced under a temporary name
// beside it: Install renames it into place, Discard drops it. Files staged
// before any is installed share one directory sync (SyncDir) after.
type Staged struct{ tmp, path string }

// Stage writes data durably to a temporary file beside path, with class c.
func Stage(path string, data []byte, c Class) (*Staged, error) {
	tmp, err := writeTemp(path, data, c, true)
	if err != nil {
		return nil, err
	}
	return &Staged{tmp: tmp, path: path}, nil
}

// Install renames the staged file over its path; the rename is durable
// once the directory is synced (SyncDir).
func (s *Staged) Install() error {
	if err := os.Rename(s.tmp, s.path); err != nil {
		return fmt.Errorf("cannot replace %q: %w", s.path, err)
	}
	s.tmp = ""
	return nil
}

// Discard removes the staged file if it was not installed.
func (s *Staged) Discard() {
	if s != nil && s.tmp != "" {
		os.Remove(s.tmp)
		s.tmp = ""
	}
}

// SyncFile makes the content of the file at path durable (not its
// directory entry: see SyncDir).
func SyncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cannot open %q: %w", path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("cannot sync %q: %w", path, err)
	}
	return nil
}

// SyncDir makes the entries of dir (a rename into it) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cannot open directory %q: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("cannot sync directory %q: %w", dir, err)
	}
	return nil
}

func (c Class) String() string {
	switch c {
	case Shared:
		return "shared"
	case Private:
		return "private"
	case Traversable:
		return "traversable"
	case Public:
		return "public"
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}
