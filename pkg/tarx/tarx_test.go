package tarx

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"
)

type ent struct {
	name, body, link string
	typ              byte
	mode             int64
	uid, gid         int
	xattrs           map[string]string
	major, minor     int64
}

func mkTar(t *testing.T, ents ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, Uid: e.uid, Gid: e.gid,
			ModTime: time.Unix(1600000000, 0), Devmajor: e.major, Devminor: e.minor, Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		for k, v := range e.xattrs {
			if h.PAXRecords == nil {
				h.PAXRecords = map[string]string{}
			}
			h.PAXRecords["SCHILY.xattr."+k] = v
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	return buf.Bytes()
}

// sandbox returns dest (inside a parent dir) and an "outside" dir beside it
// that no extraction may touch.
func sandbox(t *testing.T) (dest, outside string) {
	base := t.TempDir()
	dest, outside = filepath.Join(base, "dest"), filepath.Join(base, "outside")
	for _, d := range []string{dest, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "victim"), []byte("original"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dest, outside
}

func assertOutsideUntouched(t *testing.T, outside string) {
	t.Helper()
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("outside dir now holds %v", names)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "victim")); err != nil || string(b) != "original" {
		t.Errorf("outside/victim = %q, %v", b, err)
	}
}

func TestHostileTars(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ents    []ent
		wantErr bool
		check   func(t *testing.T, dest string)
	}{
		{name: "dotdot file", ents: []ent{{name: "../outside/victim", body: "pwned"}}, wantErr: true},
		{name: "nested dotdot", ents: []ent{{name: "a/../../outside/new", body: "pwned"}}, wantErr: true},
		{name: "absolute path lands inside", ents: []ent{{name: "/outside/victim", body: "inside"}},
			check: func(t *testing.T, dest string) { mustRead(t, filepath.Join(dest, "outside/victim"), "inside") }},
		{name: "relative symlink escape", ents: []ent{
			{name: "link", typ: tar.TypeSymlink, link: "../outside"},
			{name: "link/victim", body: "pwned"}},
			check: func(t *testing.T, dest string) { mustRead(t, filepath.Join(dest, "outside/victim"), "pwned") }},
		{name: "absolute symlink escape", ents: []ent{
			{name: "abs", typ: tar.TypeSymlink, link: "/"},
			{name: "abs/tmp/x", body: "in root"}},
			check: func(t *testing.T, dest string) { mustRead(t, filepath.Join(dest, "tmp/x"), "in root") }},
		{name: "symlink replaced by file is not followed", ents: []ent{
			{name: "f", typ: tar.TypeSymlink, link: "../outside/victim"},
			{name: "f", body: "replaced"}},
			check: func(t *testing.T, dest string) { mustRead(t, filepath.Join(dest, "f"), "replaced") }},
		{name: "hardlink dotdot", ents: []ent{{name: "h", typ: tar.TypeLink, link: "../outside/victim"}}, wantErr: true},
		{name: "hardlink through symlink", ents: []ent{
			{name: "up", typ: tar.TypeSymlink, link: "../outside"},
			{name: "h", typ: tar.TypeLink, link: "up/victim"}}, wantErr: true},
		{name: "hardlink to symlink stays a symlink", ents: []ent{
			{name: "s", typ: tar.TypeSymlink, link: "../outside/victim"},
			{name: "h", typ: tar.TypeLink, link: "s"}},
			check: func(t *testing.T, dest string) {
				if l, err := os.Readlink(filepath.Join(dest, "h")); err != nil || l != "../outside/victim" {
					t.Errorf("h -> %q, %v", l, err)
				}
			}},
		{name: "whiteout through symlink", ents: []ent{
			{name: "up", typ: tar.TypeSymlink, link: "../outside"},
			{name: "up/.wh.victim"}},
			check: func(t *testing.T, dest string) { isWhiteout(t, filepath.Join(dest, "outside/victim")) }},
		{name: "whiteout dotdot", ents: []ent{{name: ".wh..."}}, wantErr: true},
		{name: "whiteout parent dotdot", ents: []ent{{name: "../outside/.wh.victim"}}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest, outside := sandbox(t)
			err := Extract(bytes.NewReader(mkTar(t, tc.ents...)), dest, Options{})
			if tc.wantErr && err == nil {
				t.Error("extraction succeeded, want an error")
			}
			if !tc.wantErr && err != nil {
				t.Errorf("extraction failed: %v", err)
			}
			assertOutsideUntouched(t, outside)
			if tc.check != nil && err == nil {
				tc.check(t, dest)
			}
		})
	}
}

func mustRead(t *testing.T, p, want string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || string(b) != want {
		t.Errorf("%s = %q, %v; want %q", p, b, err, want)
	}
}

func isWhiteout(t *testing.T, p string) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatalf("whiteout %s: %v", p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("%s: mode %o rdev %d, want char device 0/0", p, st.Mode, st.Rdev)
	}
}

// TestAttributeTooLarge: an attribute the filesystem refuses for its size
// (over the kernel's 64 KiB; ext4 answers ENOSPC well below it) is the
// archive's fault, ErrAttrTooLarge, not the host running out of space.
func TestAttributeTooLarge(t *testing.T) {
	dest, _ := sandbox(t)
	if err := unix.Setxattr(dest, "user.small", []byte("v"), 0); err != nil {
		t.Skipf("no user attributes here: %v", err)
	}
	raw := mkTar(t, ent{name: "f", body: "x", xattrs: map[string]string{"user.big": strings.Repeat("v", 70000)}})
	if err := Extract(bytes.NewReader(raw), dest, Options{}); !errors.Is(err, ErrAttrTooLarge) {
		t.Fatalf("a 70000-byte attribute: %v; want ErrAttrTooLarge", err)
	}
}

func TestAttributesKept(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dest, _ := sandbox(t)
	raw := mkTar(t,
		ent{name: "d/", typ: tar.TypeDir, mode: 0o750, uid: 12, gid: 34},
		ent{name: "d/suid", body: "x", mode: 0o4755, uid: 1000, gid: 1000, xattrs: map[string]string{"user.k": "v", "trusted.overlay.redirect": "/etc"}},
		ent{name: "d/hard", typ: tar.TypeLink, link: "d/suid"},
		ent{name: "dev/null", typ: tar.TypeChar, mode: 0o666, major: 1, minor: 3},
		ent{name: "fifo", typ: tar.TypeFifo, mode: 0o600},
		ent{name: "sl", typ: tar.TypeSymlink, link: "d/suid"},
	)
	if err := Extract(bytes.NewReader(raw), dest, Options{}); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	check := func(p string, mode uint32, uid, gid uint32) {
		t.Helper()
		if err := unix.Lstat(filepath.Join(dest, p), &st); err != nil {
			t.Fatal(err)
		}
		if st.Mode&0o7777 != mode || st.Uid != uid || st.Gid != gid {
			t.Errorf("%s: mode %o uid %d gid %d, want %o %d %d", p, st.Mode&0o7777, st.Uid, st.Gid, mode, uid, gid)
		}
		if st.Mtim.Sec != 1600000000 {
			t.Errorf("%s: mtime %d", p, st.Mtim.Sec)
		}
	}
	check("d", 0o750, 12, 34)
	check("d/suid", 0o4755, 1000, 1000)
	if st.Nlink != 2 {
		t.Errorf("d/suid nlink = %d, want 2 (hardlink)", st.Nlink)
	}
	check("dev/null", 0o666, 0, 0)
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != 1 || unix.Minor(st.Rdev) != 3 {
		t.Errorf("dev/null is not char 1:3")
	}
	buf := make([]byte, 16)
	if n, err := unix.Lgetxattr(filepath.Join(dest, "d/suid"), "user.k", buf); err != nil || string(buf[:n]) != "v" {
		t.Errorf("xattr user.k = %q, %v", buf[:n], err)
	}
	if _, err := unix.Lgetxattr(filepath.Join(dest, "d/suid"), "trusted.overlay.redirect", buf); !errors.Is(err, unix.ENODATA) {
		t.Errorf("trusted.overlay.redirect from the tar was applied (err %v)", err)
	}
	if l, err := os.Readlink(filepath.Join(dest, "sl")); err != nil || l != "d/suid" {
		t.Errorf("sl -> %q, %v", l, err)
	}
}

func TestWhiteoutModes(t *testing.T) {
	lower := mkTar(t,
		ent{name: "keep", body: "k"},
		ent{name: "gone", body: "g"},
		ent{name: "opq/", typ: tar.TypeDir, mode: 0o755},
		ent{name: "opq/old", body: "o"})
	upper := mkTar(t,
		ent{name: ".wh.gone"},
		ent{name: "opq/", typ: tar.TypeDir, mode: 0o755},
		ent{name: "opq/.wh..wh..opq"},
		ent{name: "opq/new", body: "n"})

	t.Run("apply", func(t *testing.T) {
		dest, _ := sandbox(t)
		for _, l := range [][]byte{lower, upper} {
			if err := Extract(bytes.NewReader(l), dest, Options{Whiteouts: WhiteoutApply}); err != nil {
				t.Fatal(err)
			}
		}
		mustRead(t, filepath.Join(dest, "keep"), "k")
		mustRead(t, filepath.Join(dest, "opq/new"), "n")
		for _, p := range []string{"gone", "opq/old", "opq/.wh..wh..opq", ".wh.gone"} {
			if _, err := os.Lstat(filepath.Join(dest, p)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s still exists (%v)", p, err)
			}
		}
	})
	t.Run("overlay", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root for trusted xattrs and mknod")
		}
		dest, _ := sandbox(t)
		if err := Extract(bytes.NewReader(upper), dest, Options{}); err != nil {
			t.Fatal(err)
		}
		isWhiteout(t, filepath.Join(dest, "gone"))
		buf := make([]byte, 4)
		if n, err := unix.Lgetxattr(filepath.Join(dest, "opq"), "trusted.overlay.opaque", buf); err != nil || string(buf[:n]) != "y" {
			t.Errorf("opq opaque xattr = %q, %v", buf[:n], err)
		}
		mustRead(t, filepath.Join(dest, "opq/new"), "n")
	})
}

func TestCorruptInput(t *testing.T) {
	good := mkTar(t, ent{name: "a", body: strings.Repeat("x", 5000)})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(good)
	zw.Close()
	corruptGz := append([]byte(nil), gz.Bytes()...)
	corruptGz[len(corruptGz)/2] ^= 0xff
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"truncated tar", good[:700]},
		{"garbage header", append(bytes.Repeat([]byte{'z'}, 512), good...)},
		{"corrupt gzip", corruptGz},
		{"truncated gzip", gz.Bytes()[:gz.Len()/2]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest, _ := sandbox(t)
			r, err := Decompress(context.Background(), bytes.NewReader(tc.data))
			if err == nil {
				err = Extract(r, dest, Options{})
				if err == nil {
					_, err = io.Copy(io.Discard, r)
				}
			}
			if err == nil {
				t.Fatal("corrupt input accepted")
			}
			t.Logf("error: %v", err)
		})
	}
	t.Run("gzip ok", func(t *testing.T) {
		dest, _ := sandbox(t)
		r, err := Decompress(context.Background(), bytes.NewReader(gz.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if err := Extract(r, dest, Options{}); err != nil {
			t.Fatal(err)
		}
		mustRead(t, filepath.Join(dest, "a"), strings.Repeat("x", 5000))
	})
}

func TestDecompressFormats(t *testing.T) {
	raw := mkTar(t, ent{name: "z", body: strings.Repeat("zstd and gzip ", 1000)})
	var gz, zs bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	zw.Close()
	enc, err := zstd.NewWriter(&zs)
	if err != nil {
		t.Fatal(err)
	}
	enc.Write(raw)
	enc.Close()
	for name, data := range map[string][]byte{"plain": raw, "gzip": gz.Bytes(), "zstd": zs.Bytes()} {
		t.Run(name, func(t *testing.T) {
			r, err := Decompress(context.Background(), bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, raw) {
				t.Errorf("decompressed %d bytes (%v), want the %d-byte tar", len(got), err, len(raw))
			}
		})
	}
}

func TestIgnoredEntryTypes(t *testing.T) {
	dest, _ := sandbox(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := "keep me"
	tw.WriteHeader(&tar.Header{Name: "keep", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))})
	tw.Write([]byte(body))
	// A pax global header named like an existing file must not touch it.
	tw.WriteHeader(&tar.Header{Name: "keep", Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": "x"}, Format: tar.FormatPAX})
	tw.Close()
	if err := Extract(bytes.NewReader(buf.Bytes()), dest, Options{}); err != nil {
		t.Fatal(err)
	}
	mustRead(t, filepath.Join(dest, "keep"), body)
}

// TestValidateRefusesLinkEscapes: Validate (the check of a layer as it is
// pulled) refuses the hard links Extract refuses for their header alone,
// so that no image is recorded that cannot be unpacked.
func TestValidateRefusesLinkEscapes(t *testing.T) {
	for name, e := range map[string]ent{
		"dotdot":   {name: "h", typ: tar.TypeLink, link: "../outside/victim"},
		"nested":   {name: "h", typ: tar.TypeLink, link: "a/../../victim"},
		"the root": {name: "h", typ: tar.TypeLink, link: "./"},
	} {
		raw := mkTar(t, ent{name: "a", typ: tar.TypeDir}, e)
		if err := Validate(bytes.NewReader(raw)); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("%s: Validate: %v, want ErrUnsafePath", name, err)
		}
		dest, _ := sandbox(t)
		if err := Extract(bytes.NewReader(raw), dest, Options{}); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("%s: Extract: %v, want ErrUnsafePath", name, err)
		}
	}
}

// TestDirTimesStayInside: directory times are set at the end of the
// stream, when a later entry may have replaced a directory on the way with
// a symlink: the times must not land on the directory it points to.
func TestDirTimesStayInside(t *testing.T) {
	dest, outside := sandbox(t)
	if err := os.Mkdir(filepath.Join(outside, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	before, err := os.Lstat(filepath.Join(outside, "d"))
	if err != nil {
		t.Fatal(err)
	}
	tarball := mkTar(t,
		ent{name: "a/", typ: tar.TypeDir, mode: 0o755},
		ent{name: "a/d/", typ: tar.TypeDir, mode: 0o755},
		ent{name: "a", typ: tar.TypeSymlink, link: outside})
	if err := Extract(bytes.NewReader(tarball), dest, Options{}); err != nil {
		t.Fatal(err)
	}
	after, err := os.Lstat(filepath.Join(outside, "d"))
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("outside/d's mtime changed from %v to %v", before.ModTime(), after.ModTime())
	}
}

// zstdFrame is a zstd frame of an empty tar (1024 zero bytes, one RLE
// block) whose header declares a window of 2^windowLog bytes.
func zstdFrame(windowLog byte) []byte {
	return []byte{0x28, 0xb5, 0x2f, 0xfd, // magic
		0x00,                   // no single segment, no content size, no checksum
		(windowLog - 10) << 3,  // window descriptor: exponent, mantissa 0
		0x03, 0x20, 0x00, 0x00} // last block, RLE, 1024 bytes of 0x00
}

// TestZstdWindowBounded: a zstd layer declares its window, which the
// decoder fills before it reuses it: a 67 KB layer of zeros with a 512 MiB
// window took 527 MiB to decode, per layer decoded at once. Windows
// larger than the reference decoder's default limit (128 MiB, zstd
// --long=27; plain zstd -19 uses 8 MiB) are refused.
func TestZstdWindowBounded(t *testing.T) {
	for _, tc := range []struct {
		windowLog byte
		ok        bool
	}{{23, true}, {27, true}, {28, false}, {29, false}} {
		r, err := Decompress(context.Background(), bytes.NewReader(zstdFrame(tc.windowLog)))
		if err == nil {
			err = Validate(r)
			r.Close()
		}
		if tc.ok && err != nil {
			t.Errorf("window 2^%d refused: %v", tc.windowLog, err)
		}
		if !tc.ok && err == nil {
			t.Errorf("window 2^%d accepted", tc.windowLog)
		}
	}
}
