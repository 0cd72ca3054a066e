package store

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// FuzzACI: any file given as an ACI (rkt fetch aci:PATH, rkt 1.x's store)
// is refused or read; reading its manifest, naming it, mapping its config
// and converting its rootfs never panic.
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
	f.Add([]byte("BZh91AY&SY"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "x.aci")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := ReadACIManifest(p)
		if err != nil {
			return
		}
		ACIReference(m)
		ACIConfig(m)
		aciChain(p, m, nil)
		writeACILayer(p, io.Discard)
	})
}
