// Package upper archives an overlayfs upper directory as an OCI layer. It
// is apart from package tarx so that stage1, which archives apps' writable
// layers for checkpoints, does not link tarx's decompressors.
package upper

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
// Owners, modes, times, hardlinks, device nodes and xattrs are kept.
func Archive(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	links := map[[2]uint64]string{} // (dev, ino) of multiply-linked files -> first name
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*unix.Stat_t)
		if !ok {
			st = &unix.Stat_t{}
			if err := unix.Lstat(p, st); err != nil {
				return fmt.Errorf("cannot stat %s: %w", p, err)
			}
		}
		if fi.Mode()&fs.ModeCharDevice != 0 && st.Rdev == 0 {
			wh := filepath.Join(filepath.Dir(rel), WhiteoutPrefix+filepath.Base(rel))
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: wh, Mode: 0o600, ModTime: fi.ModTime(), Format: tar.FormatPAX})
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return fmt.Errorf("cannot read link %s: %w", p, err)
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return fmt.Errorf("cannot archive %s: %w", p, err)
		}
		h.Name = rel
		h.Uname, h.Gname = "", ""
		h.Format = tar.FormatPAX
		if fi.IsDir() {
			h.Name += "/"
		}
		opaque := false
		if h.PAXRecords, opaque, err = xattrRecords(p); err != nil {
			return err
		}
		if fi.Mode().IsRegular() && st.Nlink > 1 {
			key := [2]uint64{st.Dev, st.Ino}
			if first, seen := links[key]; seen {
				h.Typeflag, h.Linkname, h.Size = tar.TypeLink, first, 0
			} else {
				links[key] = rel
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("cannot archive %s: %w", p, err)
		}
		if h.Typeflag == tar.TypeReg && h.Size > 0 {
			f, err := os.Open(p)
			if err != nil {
				return fmt.Errorf("cannot archive %s: %w", p, err)
			}
			_, err = io.CopyN(tw, f, h.Size)
			f.Close()
			if err != nil {
				return fmt.Errorf("cannot archive %s: %w", p, err)
			}
		}
		if opaque {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: filepath.Join(rel, WhiteoutOpaque), Mode: 0o600, ModTime: fi.ModTime(), Format: tar.FormatPAX})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// xattrRecords returns the PAX records of the file's extended attributes
// other than overlayfs' own, and whether it is an opaque directory.
func xattrRecords(p string) (map[string]string, bool, error) {
	sz, err := unix.Llistxattr(p, nil)
	if err != nil || sz == 0 {
		if err == unix.ENOTSUP {
			err = nil
		}
		return nil, false, err
	}
	buf := make([]byte, sz)
	if sz, err = unix.Llistxattr(p, buf); err != nil {
		return nil, false, fmt.Errorf("cannot list the attributes of %s: %w", p, err)
	}
	var recs map[string]string
	opaque := false
	for _, name := range strings.Split(strings.TrimRight(string(buf[:sz]), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		val := make([]byte, 64<<10)
		n, err := unix.Lgetxattr(p, name, val)
		if err != nil {
			return nil, false, fmt.Errorf("cannot read attribute %s of %s: %w", name, p, err)
		}
		if name == OpaqueXattr {
			opaque = string(val[:n]) == "y"
			continue
		}
		if strings.HasPrefix(name, OverlayXattrPrefix) {
			continue
		}
		if recs == nil {
			recs = map[string]string{}
		}
		recs[XattrPAXPrefix+name] = string(val[:n])
	}
	return recs, opaque, nil
}
