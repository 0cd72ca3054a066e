package store

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/rkt/rkt/pkg/tarx"
	"github.com/rkt/rkt/tests/testutil"
)

// FuzzACI: any file given as an ACI (rkt fetch aci:PATH, rkt 1.x's store)
// is refused or read; reading its manifest, naming it, mapping its config
// and walking its dependencies never panic nor loop (every dependency
// resolves to the ACI itself here), and the layer converted from its
// rootfs unpacks inside its destination or is refused.
func FuzzACI(f *testing.F) {
	valid := aciBytes(f, aciManifest("example.com/fuzz", "1", "/bin/sh"), []entry{
		{name: "bin", typ: tar.TypeDir}, {name: "bin/sh", body: "sh", mode: 0o755}, {name: "bin/ash", typ: tar.TypeLink, linkname: "bin/sh"},
	})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(valid)
	zw.Close()
	f.Add(valid)
	f.Add(gz.Bytes())
	f.Add(tarBytes(f, []entry{{name: "manifest", body: `{"acKind":"ImageManifest","name":"x","dependencies":[{"imageName":"y","imageID":"sha512-00"}]}`}}))
	f.Add(tarBytes(f, []entry{{name: "./manifest", body: `{"acKind":"ImageManifest","name":"A/B:C","labels":[{"name":"version","value":"+++"}]}`},
		{name: "rootfs/../../etc/x", body: "x"}, {name: "rootfs/l", typ: tar.TypeLink, linkname: "manifest"}}))
	f.Add(tarBytes(f, []entry{{name: "manifest", body: `{"acKind":"ImageManifest","name":"x"}`},
		{name: "rootfs/up", typ: tar.TypeSymlink, linkname: "../.."}, {name: "rootfs/up/x", body: "x"},
		{name: "rootfs/h", typ: tar.TypeLink, linkname: "rootfs/../../victim/file"}}))
	f.Add([]byte("BZh91AY&SY"))
	f.Fuzz(func(t *testing.T, b []byte) {
		base := t.TempDir()
		p := filepath.Join(base, "x.aci")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := ReadACIManifest(p)
		if err != nil {
			return
		}
		ACIReference(m)
		ACIConfig(m)
		chain, err := aciChain(p, m, func(string) (string, error) { return p, nil })
		if len(m.Dependencies) > 0 && (err == nil || len(chain) > 0) {
			t.Fatalf("an ACI depending on itself: %v, %v", chain, err)
		}
		root, victim := filepath.Join(base, "root"), filepath.Join(base, "victim")
		for _, d := range []string{root, victim} {
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(victim, "file"), []byte("victim"), 0o600); err != nil {
			t.Fatal(err)
		}
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeACILayer(p, m, pw, "")) }()
		err = tarx.Extract(pr, root, tarx.Options{})
		pr.CloseWithError(errors.New("extraction ended"))
		_ = err
		for dir, want := range map[string]int{base: 3, victim: 1} {
			if entries, err := os.ReadDir(dir); err != nil || len(entries) != want {
				t.Fatalf("%s holds %d entries, want %d (%v)", dir, len(entries), want, err)
			}
		}
		if got, err := os.ReadFile(filepath.Join(victim, "file")); err != nil || string(got) != "victim" {
			t.Fatalf("victim file: %q, %v", got, err)
		}
	})
}

// FuzzLayoutArchive: an OCI archive (rkt fetch oci-archive:PATH) unpacks
// into its directory, regular files and directories only, or is refused.
func FuzzLayoutArchive(f *testing.F) {
	f.Add(tarBytes(f, []entry{{name: "oci-layout", body: `{"imageLayoutVersion":"1.0.0"}`}, {name: "blobs/sha256", typ: tar.TypeDir},
		{name: "index.json", body: `{"schemaVersion":2,"manifests":[]}`}}))
	f.Add(tarBytes(f, []entry{{name: "../../victim/file", body: "x"}, {name: "/abs", body: "x"}, {name: "l", typ: tar.TypeSymlink, linkname: "/"},
		{name: "h", typ: tar.TypeLink, linkname: "../victim/file"}, {name: "a", body: "x"}, {name: "a/b", body: "x"}}))
	f.Add(testutil.SparseTars("big", 1<<20)["pax"])
	f.Fuzz(func(t *testing.T, b []byte) {
		base := t.TempDir()
		p := filepath.Join(base, "a.tar")
		dir, victim := filepath.Join(base, "dir"), filepath.Join(base, "victim")
		for _, d := range []string{dir, victim} {
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(victim, "file"), []byte("victim"), 0o600); err != nil {
			t.Fatal(err)
		}
		_ = extractLayoutArchive(p, dir)
		for d, want := range map[string]int{base: 3, victim: 1} {
			if entries, err := os.ReadDir(d); err != nil || len(entries) != want {
				t.Fatalf("%s holds %d entries, want %d (%v)", d, len(entries), want, err)
			}
		}
		if got, err := os.ReadFile(filepath.Join(victim, "file")); err != nil || string(got) != "victim" {
			t.Fatalf("victim file: %q, %v", got, err)
		}
		filepath.WalkDir(dir, func(q string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !d.Type().IsRegular() {
				t.Fatalf("%s: %v", q, d.Type())
			}
			return nil
		})
	})
}
