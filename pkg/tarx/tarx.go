// Package tarx extracts tar streams from untrusted sources (image layers)
// so that no entry lands outside the destination: ".." components are
// refused, absolute names are taken relative to the destination, and paths
// are resolved through symlinks as if the destination were the root
// (github.com/cyphar/filepath-securejoin), for entries, hardlink targets and
// whiteouts alike. Modes, owners, times, xattrs, hardlinks and device nodes
// are kept when running as root.
package tarx

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/tarx/upper"
)

// WhiteoutMode says what Extract does with OCI whiteout entries.
type WhiteoutMode int

const (
	// WhiteoutOverlay converts whiteouts to overlayfs form: ".wh.<name>"
	// becomes a 0/0 character device <name>, ".wh..wh..opq" sets
	// trusted.overlay.opaque=y on its directory. Used for layer trees.
	WhiteoutOverlay WhiteoutMode = iota
	// WhiteoutApply removes the whited-out paths from the destination, for
	// rendering layers one over the other into one flat tree.
	WhiteoutApply
)

const (
	whiteoutPrefix     = upper.WhiteoutPrefix
	whiteoutOpaque     = upper.WhiteoutOpaque
	opaqueXattr        = upper.OpaqueXattr
	overlayXattrPrefix = upper.OverlayXattrPrefix
	xattrPAXPrefix     = upper.XattrPAXPrefix
)

// Options tune Extract.
type Options struct {
	// Whiteouts selects how whiteout entries are handled.
	Whiteouts WhiteoutMode
	// NoSameOwner skips chown (owners are kept by default when root).
	NoSameOwner bool
}

// ErrUnsafePath is returned for an entry whose name or link escapes the
// destination.
var ErrUnsafePath = errors.New("unsafe path in archive")

// ErrSparse is returned for sparse file entries (GNU or PAX): a few bytes
// of archive could declare terabytes of zeros to write.
var ErrSparse = errors.New("sparse files are not supported in layers")

type extractor struct {
	root    string
	opts    Options
	isRoot  bool
	dirs    []dirTimes      // directories whose times are set at the end
	created map[string]bool // paths created by this stream (WhiteoutApply only)
	buf     []byte
}

// copyBufSize is the buffer Extract writes files from, reused for each.
const copyBufSize = 128 << 10

// Extract unpacks the uncompressed tar stream r into the existing directory
// dest. On error dest may hold part of the stream: callers extract into a
// temporary directory and rename it when Extract succeeds.
func Extract(r io.Reader, dest string, opts Options) error {
	root, err := filepath.Abs(dest)
	if err != nil {
		return fmt.Errorf("cannot extract into %q: %w", dest, err)
	}
	root, err = filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("cannot extract into %q: %w", dest, err)
	}
	x := &extractor{root: root, opts: opts, isRoot: os.Geteuid() == 0, created: map[string]bool{}, buf: make([]byte, copyBufSize)}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("corrupt tar stream: %w", err)
		}
		if err := x.entry(tr, h); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("truncated tar stream in %q: %w", h.Name, err)
			}
			return fmt.Errorf("cannot extract %q: %w", h.Name, err)
		}
	}
	// Directory times last (creating entries changed them), deepest first.
	for i := len(x.dirs) - 1; i >= 0; i-- {
		d := x.dirs[i]
		p, err := x.reresolve(d.path)
		if err != nil {
			return fmt.Errorf("cannot set times of %q: %w", d.name, err)
		}
		err = unix.UtimesNanoAt(unix.AT_FDCWD, p, d.ts[:], unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			continue // a later entry replaced it: no directory to set
		}
		if err != nil {
			return fmt.Errorf("cannot set times of %q: %w", d.name, err)
		}
	}
	return nil
}

// cleanName makes an entry name relative to the root and refuses "..".
func cleanName(name string) (string, error) {
	n := path.Clean("/" + strings.TrimPrefix(name, "./"))
	// path.Clean of a rooted path drops leading "..", so compare with the
	// unrooted form to catch escapes.
	if rel := path.Clean(strings.TrimLeft(name, "/")); rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%w: %q leaves the destination", ErrUnsafePath, name)
	}
	return strings.TrimPrefix(n, "/"), nil
}

// reresolve returns p, a path in the root, with its directory resolved
// again inside the root: a later entry may have made a directory on the
// way a symlink (to "/" or anywhere).
func (x *extractor) reresolve(p string) (string, error) {
	rel, err := filepath.Rel(x.root, p)
	if err != nil {
		return "", err
	}
	dir, base := filepath.Split(rel)
	parent, err := securejoin.SecureJoin(x.root, dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(parent, base), nil
}

// resolveDir resolves a directory name inside the root through symlinks
// (confined to the root) and creates what is missing.
func (x *extractor) resolveDir(dir string) (string, error) {
	if dir == "." || dir == "" {
		return x.root, nil
	}
	p, err := securejoin.SecureJoin(x.root, dir)
	if err != nil {
		return "", err
	}
	if _, err := os.Lstat(p); err == nil {
		x.markCreated(p) // this stream puts something in it
		return p, nil
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		return "", err
	}
	x.markCreated(p)
	return p, nil
}

func (x *extractor) entry(tr *tar.Reader, h *tar.Header) error {
	if err := CheckHeader(h); err != nil {
		return err
	}
	switch h.Typeflag {
	//lint:ignore SA1019 old tars use TypeRegA
	case tar.TypeDir, tar.TypeReg, tar.TypeRegA, tar.TypeSymlink, tar.TypeLink,
		tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
	default:
		return nil // pax global headers and vendor types carry no file
	}
	name, err := cleanName(h.Name)
	if err != nil {
		return err
	}
	if name == "" {
		return nil // the root itself: keep the destination's attributes
	}
	dir, base := path.Split(name)
	parent, err := x.resolveDir(dir)
	if err != nil {
		return err
	}
	if strings.HasPrefix(base, whiteoutPrefix) {
		return x.whiteout(parent, base, h)
	}
	target := filepath.Join(parent, base)
	if err := x.prepareTarget(target, h); err != nil {
		return err
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := os.Mkdir(target, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	//lint:ignore SA1019 old tars use TypeRegA
	case tar.TypeReg, tar.TypeRegA:
		if err := x.writeFile(target, tr, h.Size); err != nil {
			return err
		}
	case tar.TypeSymlink:
		if err := os.Symlink(h.Linkname, target); err != nil {
			return err
		}
	case tar.TypeLink:
		return x.hardlink(target, h)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		if h.Typeflag != tar.TypeFifo && !x.isRoot {
			return nil // device nodes need root: skipped
		}
		mode := uint32(unix.S_IFIFO)
		switch h.Typeflag {
		case tar.TypeChar:
			mode = unix.S_IFCHR
		case tar.TypeBlock:
			mode = unix.S_IFBLK
		}
		if err := unix.Mknod(target, mode|0o600, int(unix.Mkdev(uint32(h.Devmajor), uint32(h.Devminor)))); err != nil {
			return err
		}
	}
	x.markCreated(target)
	return x.setAttrs(target, h)
}

// dirTimes is what Extract keeps of a directory entry until the end: its
// path and times, not its header (whose PAX records may take 1 MiB).
type dirTimes struct {
	path, name string
	ts         [2]unix.Timespec
}

// markCreated notes that p was created by this stream, which only flat
// rendering needs (opaque whiteouts spare what the layer itself made).
// A directory holding such an entry is marked too, up to the root, so
// that an opaque whiteout above clears only what earlier layers put in it.
func (x *extractor) markCreated(p string) {
	if x.opts.Whiteouts != WhiteoutApply {
		return
	}
	for ; p != x.root && len(p) > len(x.root) && !x.created[p]; p = filepath.Dir(p) {
		x.created[p] = true
	}
}

// prepareTarget removes what an earlier entry left at target unless both are
// directories (a later entry replaces an earlier one, as tar does).
func (x *extractor) prepareTarget(target string, h *tar.Header) error {
	fi, err := os.Lstat(target)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() && h.Typeflag == tar.TypeDir {
		return nil
	}
	return os.RemoveAll(target)
}

func (x *extractor) writeFile(target string, r io.Reader, size int64) error {
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	// Only the file's Write: *os.File's ReadFrom would ignore x.buf and
	// allocate a buffer per file.
	n, err := io.CopyBuffer(struct{ io.Writer }{f}, io.LimitReader(r, size), x.buf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("short file: %d of %d bytes", n, size)
	}
	return nil
}

// hardlink links target to an earlier entry; the link target is resolved
// inside the root and its last component is not followed.
func (x *extractor) hardlink(target string, h *tar.Header) error {
	ln, err := cleanName(h.Linkname)
	if err != nil {
		return err
	}
	if ln == "" {
		return fmt.Errorf("%w: hardlink to the root", ErrUnsafePath)
	}
	ldir, lbase := path.Split(ln)
	lparent, err := securejoin.SecureJoin(x.root, ldir)
	if err != nil {
		return err
	}
	src := filepath.Join(lparent, lbase)
	fi, err := os.Lstat(src)
	if err != nil {
		return fmt.Errorf("hardlink target %q: %w", h.Linkname, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("hardlink target %q is a directory", h.Linkname)
	}
	if err := unix.Linkat(unix.AT_FDCWD, src, unix.AT_FDCWD, target, 0); err != nil {
		return fmt.Errorf("cannot link to %q: %w", h.Linkname, err)
	}
	x.markCreated(target)
	return nil
}

// IsSparse reports whether h is a GNU sparse entry or a PAX one (GNU
// formats 0.0 to 1.0, which archive/tar reports as regular files of the
// full logical size).
func IsSparse(h *tar.Header) bool {
	if h.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}
