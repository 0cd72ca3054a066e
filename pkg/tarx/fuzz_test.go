package tarx

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rkt/rkt/tests/testutil"
)

// fuzzSeed writes a tar of the given headers (regular files get body "x").
func fuzzSeed(hs ...*tar.Header) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hs {
		if h.Typeflag == tar.TypeReg {
			h.Size = 1
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		tw.WriteHeader(h)
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte("x"))
		}
	}
	tw.Close()
	return buf.Bytes()
}

// FuzzExtract extracts arbitrary (possibly compressed) tar streams next to
// a victim directory: extraction may fail but must not panic or write
// outside its destination.
func FuzzExtract(f *testing.F) {
	reg := func(name string) *tar.Header { return &tar.Header{Name: name, Typeflag: tar.TypeReg} }
	sym := func(name, to string) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: to}
	}
	link := func(name, to string) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeLink, Linkname: to}
	}
	dir := func(name string) *tar.Header { return &tar.Header{Name: name, Typeflag: tar.TypeDir} }
	seeds := [][]byte{
		fuzzSeed(dir("a"), reg("a/b"), link("c", "a/b")),
		fuzzSeed(reg("../victim/file")),
		fuzzSeed(sym("s", "../victim"), reg("s/new")),
		fuzzSeed(sym("s", "/"), reg("s/x")),
		fuzzSeed(dir("d"), sym("d/up", ".."), sym("e", "d/up/../victim"), reg("e/new")),
		fuzzSeed(link("h", "../victim/file")),
		fuzzSeed(sym("s", "../victim"), link("h", "s/file")),
		fuzzSeed(sym("w", "../victim"), reg("w/.wh.file")),
		fuzzSeed(sym("o", "../victim"), reg("o/.wh..wh..opq")),
		fuzzSeed(reg("a"), dir("a"), reg("a/b"), sym("a/b", "../../victim/file")),
		fuzzSeed(&tar.Header{Name: "f", Typeflag: tar.TypeFifo}, reg("f")),
	}
	for i, s := range seeds {
		f.Add(s, i%2 == 1)
	}
	for _, s := range testutil.SparseTars("big", 1<<20) {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, data []byte, apply bool) {
		mode := WhiteoutOverlay
		if apply {
			mode = WhiteoutApply
		}
		base := t.TempDir()
		root, victim := filepath.Join(base, "root"), filepath.Join(base, "victim")
		for _, d := range []string{root, victim} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(victim, "file"), []byte("victim"), 0o644); err != nil {
			t.Fatal(err)
		}
		if zr, err := Decompress(context.Background(), bytes.NewReader(data)); err == nil {
			_ = Extract(zr, root, Options{Whiteouts: mode})
			zr.Close()
		}
		checkUntouched(t, base, victim)
	})
}

// checkUntouched fails if base gained an entry beside root and victim, or
// if the victim dir or its file changed.
func checkUntouched(t *testing.T, base, victim string) {
	t.Helper()
	for dir, want := range map[string][]string{base: {"root", "victim"}, victim: {"file"}} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		if len(got) != len(want) || got[0] != want[0] || got[len(got)-1] != want[len(want)-1] {
			t.Fatalf("%s was written to: %v", dir, got)
		}
	}
	p := filepath.Join(victim, "file")
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "victim" || fi.Mode() != 0o644 {
		t.Fatalf("victim file changed: %q %v %v", b, fi.Mode(), err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && (st.Nlink != 1 || st.Uid != uint32(os.Geteuid())) {
		t.Fatalf("victim file got a link or an owner: nlink %d uid %d", st.Nlink, st.Uid)
	}
}
