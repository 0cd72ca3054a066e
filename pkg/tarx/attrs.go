package tarx

import (
	"archive/tar"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrAttrTooLarge: the filesystem refused an extended attribute of the
// archive for its size.
var ErrAttrTooLarge = errors.New("extended attribute too large for the filesystem")

// setAttrs applies owner, xattrs, mode and times of h to target (a path the
// extractor just created, so its last component is what h describes).
func (x *extractor) setAttrs(target string, h *tar.Header) error {
	isLink := h.Typeflag == tar.TypeSymlink
	if x.isRoot && !x.opts.NoSameOwner {
		if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
			return fmt.Errorf("cannot chown: %w", err)
		}
	}
	for k, v := range h.PAXRecords {
		attr, ok := strings.CutPrefix(k, xattrPAXPrefix)
		if !ok || strings.HasPrefix(attr, overlayXattrPrefix) {
			// overlayfs' own attributes (redirects, metacopy, opaque) come
			// only from whiteouts, never from a layer's say-so.
			continue
		}
		if err := unix.Lsetxattr(target, attr, []byte(v), 0); err != nil {
			if errors.Is(err, unix.ENOTSUP) || (errors.Is(err, unix.EPERM) && (!x.isRoot || isLink)) {
				// The filesystem has no xattrs, trusted.* and security.*
				// need root, user.* is not allowed on symlinks.
				continue
			}
			if errors.Is(err, unix.E2BIG) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.ERANGE) {
				// the archive's value, not the host: ext4 answers ENOSPC
				// for a value that fits neither the inode nor a block
				return fmt.Errorf("cannot set xattr %q of %d bytes: %w (%w)", attr, len(v), ErrAttrTooLarge, err)
			}
			return fmt.Errorf("cannot set xattr %q: %w", attr, err)
		}
	}
	if !isLink {
		// After chown, which clears setuid/setgid bits.
		if err := unix.Fchmodat(unix.AT_FDCWD, target, uint32(h.Mode)&0o7777, 0); err != nil {
			return fmt.Errorf("cannot chmod: %w", err)
		}
	}
	ts := times(h)
	if h.Typeflag == tar.TypeDir {
		x.dirs = append(x.dirs, dirTimes{path: target, name: h.Name, ts: ts})
		return nil
	}
	return unix.UtimesNanoAt(unix.AT_FDCWD, target, ts[:], unix.AT_SYMLINK_NOFOLLOW)
}

// times returns the access and modification times of h.
func times(h *tar.Header) [2]unix.Timespec {
	atime := h.AccessTime
	if atime.IsZero() {
		atime = h.ModTime
	}
	return [2]unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(h.ModTime.UnixNano())}
}

// whiteout handles ".wh.<name>" and ".wh..wh..opq" in directory parent.
func (x *extractor) whiteout(parent, base string, h *tar.Header) error {
	if base == whiteoutOpaque {
		if x.opts.Whiteouts == WhiteoutApply {
			return x.clearLower(parent)
		}
		if err := unix.Lsetxattr(parent, opaqueXattr, []byte("y"), 0); err != nil {
			return fmt.Errorf("cannot mark directory opaque: %w", err)
		}
		return nil
	}
	victim := strings.TrimPrefix(base, whiteoutPrefix)
	if victim == "" || victim == "." || victim == ".." || strings.Contains(victim, "/") {
		return fmt.Errorf("%w: whiteout %q", ErrUnsafePath, h.Name)
	}
	target := filepath.Join(parent, victim)
	if err := os.RemoveAll(target); err != nil {
		return fmt.Errorf("cannot apply whiteout: %w", err)
	}
	if x.opts.Whiteouts == WhiteoutApply {
		return nil
	}
	if err := unix.Mknod(target, unix.S_IFCHR|0o600, 0); err != nil {
		return fmt.Errorf("cannot create overlay whiteout: %w", err)
	}
	if x.isRoot && !x.opts.NoSameOwner {
		if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
			return fmt.Errorf("cannot chown whiteout: %w", err)
		}
	}
	return nil
}

// clearLower removes from dir what earlier layers put there (opaque
// directory in flat rendering); entries of this stream stay. A directory
// this stream declared may still hold entries of earlier layers (it was
// there already): those go too, as overlayfs hides all of an opaque
// directory's lower content.
func (x *extractor) clearLower(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("cannot read opaque directory: %w", err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if x.created[p] {
			if e.IsDir() { // from Lstat: a symlink is not followed
				if err := x.clearLower(p); err != nil {
					return err
				}
			}
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("cannot clear opaque directory: %w", err)
		}
	}
	return nil
}
