// Package upper archives an overlayfs upper directory as an OCI layer. It
// is apart from package tarx so that stage1, which archives apps' writable
// layers for checkpoints, does not link tarx's decompressors.
package upper

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The names of OCI layers and overlayfs that pkg/tarx reads back.
const (
	WhiteoutPrefix = ".wh."
	WhiteoutOpaque = ".wh..wh..opq"
	OpaqueXattr    = "trusted.overlay.opaque"
	// OverlayXattrPrefix: attributes overlayfs interprets.
	OverlayXattrPrefix = "trusted.overlay."
	XattrPAXPrefix     = "SCHILY.xattr."
)

// Archive writes the overlayfs upper directory dir to w as an
// uncompressed OCI layer: a 0/0 character device <name> (a whiteout) becomes
// ".wh.<name>", a directory with trusted.overlay.opaque=y gets a
// ".wh..wh..opq" entry, other trusted.overlay.* attributes are dropped.
// tarx.Extract with WhiteoutOverlay turns it back into an upper directory.
// Owners, modes, times, hardlinks, device nodes and xattrs are kept. A
// file the app named ".wh.<name>" is archived under its name, which OCI
// layers reserve for whiteouts (image-spec's layer.md): any reader of the
// layer, Extract included, takes it for one.
//
// The layer is read through descriptors, not paths: each directory is
// opened in its parent without following a symlink, each entry is read
// through its parent's descriptor, and a file's content from a descriptor
// that must be the inode the walk found. Whoever still writes into the
// layer (another container of the pod, through the shared PID namespace's
// /proc/<pid>/root) cannot swap a symlink in to make it read outside dir:
// the archive then fails (ErrChanged) or holds what dir held.
func Archive(w io.Writer, dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot open %s: %w", dir, err)
	}
	a := &archiver{tw: tar.NewWriter(w), top: dir, links: map[[2]uint64]string{}}
	if err := a.dir(fd, ""); err != nil {
		return err
	}
	return a.tw.Close()
}

// ErrChanged is returned (wrapped) by Archive when an entry was replaced
// while it was archived.
var ErrChanged = errors.New("changed while it was archived")

// ErrAttrName is returned (wrapped) by Archive for an extended attribute
// whose name a tar cannot hold: one with "=" (Linux takes it, PAX records
// do not).
var ErrAttrName = errors.New("attribute name a tar cannot hold")

// MaxDepth bounds how deep below its top Archive descends (it holds a
// descriptor per level); a deeper tree is refused (ErrTooDeep).
const MaxDepth = 1024

// ErrTooDeep is returned (wrapped) by Archive for a tree deeper than
// MaxDepth.
var ErrTooDeep = errors.New("directory tree too deep")

type archiver struct {
	tw    *tar.Writer
	top   string               // the directory archived, for messages
	links map[[2]uint64]string // (dev, ino) of multiply-linked files -> first name
}

// beforeOpen, when set (tests), runs before the content of the regular
// file rel is opened.
var beforeOpen func(rel string)

// dir archives the entries of the directory open as fd (at rel below the
// top, "" for the top) in lexical order, depth first, as filepath.WalkDir
// would; it closes fd.
func (a *archiver) dir(fd int, rel string) error {
	d := os.NewFile(uintptr(fd), a.path(rel)) // owns fd, which the entries use until it closes
	defer d.Close()
	if rel != "" && strings.Count(rel, "/") >= MaxDepth {
		return fmt.Errorf("cannot archive %s: %w (more than %d levels)", a.top, ErrTooDeep, MaxDepth)
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", a.path(rel), err)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := a.entry(fd, path.Join(rel, name), name); err != nil {
			return err
		}
	}
	return nil
}

// entry archives name in the directory dfd (at rel below the top). Its
// metadata is read at /proc/self/fd/<dfd>/<name>, which resolves name in
// that directory and follows nothing after it.
func (a *archiver) entry(dfd int, rel, name string) error {
	p := "/proc/self/fd/" + strconv.Itoa(dfd) + "/" + name
	fi, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("cannot stat %s: %w", a.path(rel), err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("cannot stat %s: no inode", a.path(rel))
	}
	if fi.Mode()&fs.ModeCharDevice != 0 && st.Rdev == 0 {
		wh := path.Join(path.Dir(rel), WhiteoutPrefix+name)
		return a.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: wh, Mode: 0o600, ModTime: fi.ModTime(), Format: tar.FormatPAX})
	}
	link := ""
	if fi.Mode()&fs.ModeSymlink != 0 {
		if link, err = os.Readlink(p); err != nil {
			return fmt.Errorf("cannot read link %s: %w", a.path(rel), err)
		}
	}
	h, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return fmt.Errorf("cannot archive %s: %w", a.path(rel), err)
	}
	h.Name = rel
	h.Uname, h.Gname = "", ""
	h.Format = tar.FormatPAX
	if fi.IsDir() {
		h.Name += "/"
	}
	opaque := false
	if h.PAXRecords, opaque, err = xattrRecords(p, a.path(rel)); err != nil {
		return err
	}
	if fi.Mode().IsRegular() && st.Nlink > 1 {
		key := [2]uint64{st.Dev, st.Ino}
		if first, seen := a.links[key]; seen {
			h.Typeflag, h.Linkname, h.Size = tar.TypeLink, first, 0
		} else {
			a.links[key] = rel
		}
	}
	if err := a.tw.WriteHeader(h); err != nil {
		return fmt.Errorf("cannot archive %s: %w", a.path(rel), err)
	}
	switch {
	case h.Typeflag == tar.TypeReg && h.Size > 0:
		if beforeOpen != nil {
			beforeOpen(rel)
		}
		fd, err := a.open(dfd, rel, name, 0, st)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), a.path(rel))
		_, err = io.CopyN(a.tw, f, h.Size)
		f.Close()
		if err != nil {
			return fmt.Errorf("cannot archive %s: %w", a.path(rel), err)
		}
	case fi.IsDir():
		fd, err := a.open(dfd, rel, name, unix.O_DIRECTORY, st)
		if err != nil {
			return err
		}
		if err := a.dir(fd, rel); err != nil {
			return err
		}
	}
	if opaque {
		return a.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path.Join(rel, WhiteoutOpaque), Mode: 0o600, ModTime: fi.ModTime(), Format: tar.FormatPAX})
	}
	return nil
}

// open opens name in the directory dfd without following a symlink (nor
// blocking on a FIFO put in its place) and checks that it is still the
// inode st; it returns the descriptor.
func (a *archiver) open(dfd int, rel, name string, flags int, st *syscall.Stat_t) (int, error) {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			err = fmt.Errorf("%w (%v)", ErrChanged, err)
		}
		return -1, fmt.Errorf("cannot open %s: %w", a.path(rel), err)
	}
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("cannot stat %s: %w", a.path(rel), err)
	}
	if now.Dev != st.Dev || now.Ino != st.Ino {
		unix.Close(fd)
		return -1, fmt.Errorf("cannot archive %s: %w", a.path(rel), ErrChanged)
	}
	return fd, nil
}

// path is rel's path for messages.
func (a *archiver) path(rel string) string { return filepath.Join(a.top, rel) }

// xattrRecords returns the PAX records of the extended attributes of the
// file at p (named name in messages) other than overlayfs' own, and
// whether it is an opaque directory.
func xattrRecords(p, name string) (map[string]string, bool, error) {
	sz, err := unix.Llistxattr(p, nil)
	if err == unix.ENOTSUP || err == nil && sz == 0 {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cannot list the attributes of %s: %w", name, err)
	}
	buf := make([]byte, sz)
	if sz, err = unix.Llistxattr(p, buf); err != nil {
		return nil, false, fmt.Errorf("cannot list the attributes of %s: %w", name, err)
	}
	var recs map[string]string
	opaque := false
	for _, attr := range strings.Split(strings.TrimRight(string(buf[:sz]), "\x00"), "\x00") {
		if attr == "" {
			continue
		}
		val := make([]byte, 64<<10)
		n, err := unix.Lgetxattr(p, attr, val)
		if err != nil {
			return nil, false, fmt.Errorf("cannot read attribute %s of %s: %w", attr, name, err)
		}
		if attr == OpaqueXattr {
			opaque = string(val[:n]) == "y"
			continue
		}
		if strings.HasPrefix(attr, OverlayXattrPrefix) {
			continue
		}
		if strings.Contains(attr, "=") { // a PAX record's key cannot hold one
			return nil, false, fmt.Errorf("cannot archive %s: its attribute %q: %w", name, attr, ErrAttrName)
		}
		if recs == nil {
			recs = map[string]string{}
		}
		recs[XattrPAXPrefix+attr] = string(val[:n])
	}
	return recs, opaque, nil
}
