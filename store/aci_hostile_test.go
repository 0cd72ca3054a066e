package store

import (
	"archive/tar"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rkt/rkt/pkg/tarx"
	"github.com/rkt/rkt/tests/testutil"
)

// TestHostileACIRefusedAtImport: an ACI whose rootfs would leave the
// layer is refused when it is imported, and nothing is recorded (not
// only when a pod unpacks it).
func TestHostileACIRefusedAtImport(t *testing.T) {
	cases := map[string][]entry{
		"dotdot name":       {{name: "../../etc/x", body: "x"}},
		"hard link outside": {{name: "x", typ: tar.TypeLink, linkname: "../../etc/passwd"}},
		"hard link to root": {{name: "x", typ: tar.TypeLink, linkname: ""}},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			s := newStore(t)
			p := filepath.Join(t.TempDir(), "x.aci")
			if err := os.WriteFile(p, aciBytes(t, aciManifest("example.com/hostile", "1", "/x"), files), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := s.ImportACI(context.Background(), p, ACIOptions{}, FetchOptions{})
			if !errors.Is(err, tarx.ErrUnsafePath) {
				t.Errorf("import: %v, want ErrUnsafePath", err)
			}
			if imgs, _ := s.ListImages(); len(imgs) != 0 {
				t.Errorf("%d images recorded", len(imgs))
			}
		})
	}
}

// TestOCIArchiveSparseRefused: an OCI archive entry that declares a huge
// sparse file is refused before anything is written (it would expand to
// its full size on disk).
func TestOCIArchiveSparseRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.tar")
	if err := os.WriteFile(p, testutil.SparseTars("blobs/sha256/big", 256<<20)["pax"], 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	err := extractLayoutArchive(p, dir)
	if !errors.Is(err, tarx.ErrSparse) {
		t.Errorf("extract: %v, want ErrSparse", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "blobs/sha256/big")); err == nil {
		t.Errorf("the sparse entry was written: %d bytes", fi.Size())
	}
}

// TestACIChainGraphs: dependency loops (only a dependency function that
// is not content-addressed can make one) and chains longer than
// maxACIChain are refused; an ACI that two others depend on comes once.
func TestACIChainGraphs(t *testing.T) {
	dir := t.TempDir()
	// graph: name -> its dependencies (by name, as image IDs here)
	write := func(graph map[string][]string) map[string]string {
		paths := map[string]string{}
		for n, deps := range graph {
			m := aciManifest("example.com/"+n, "1", "/x")
			var ds []map[string]any
			for _, d := range deps {
				ds = append(ds, map[string]any{"imageName": "example.com/" + d, "imageID": d})
			}
			m["dependencies"] = ds
			p := filepath.Join(dir, n+".aci")
			if err := os.WriteFile(p, aciBytes(t, m, nil), 0o600); err != nil {
				t.Fatal(err)
			}
			paths[n] = p
		}
		return paths
	}
	chain := func(paths map[string]string, top string) ([]string, error) {
		m, err := ReadACIManifest(paths[top])
		if err != nil {
			t.Fatal(err)
		}
		got, err := aciChain(paths[top], m, func(id string) (string, error) { return paths[id], nil })
		var names []string
		for _, l := range got {
			names = append(names, strings.TrimSuffix(filepath.Base(l.path), ".aci"))
		}
		return names, err
	}

	diamond := write(map[string][]string{"top": {"left", "right"}, "left": {"base"}, "right": {"base"}, "base": nil})
	if got, err := chain(diamond, "top"); err != nil || strings.Join(got, " ") != "base left right top" {
		t.Errorf("diamond: %v, %v", got, err)
	}
	for name, graph := range map[string]map[string][]string{
		"self": {"a": {"a"}},
		"loop": {"a": {"b"}, "b": {"c"}, "c": {"a"}},
	} {
		if got, err := chain(write(graph), "a"); !errors.Is(err, ErrUnsupportedACI) || !strings.Contains(err.Error(), "loop") {
			t.Errorf("%s: %v, %v; want a loop refused", name, got, err)
		}
	}
	long := map[string][]string{}
	for i := 0; i <= maxACIChain; i++ {
		long[fmt.Sprint("l", i)] = []string{fmt.Sprint("l", i+1)}
	}
	long[fmt.Sprint("l", maxACIChain)] = nil
	if got, err := chain(write(long), "l0"); !errors.Is(err, ErrUnsupportedACI) {
		t.Errorf("%d ACIs: %d, %v; want refused", maxACIChain+1, len(got), err)
	}
	delete(long, "l0")
	if got, err := chain(write(long), "l1"); err != nil || len(got) != maxACIChain {
		t.Errorf("%d ACIs: %d, %v", maxACIChain, len(got), err)
	}
}

// TestACINameChecked: an ACI's name is an AC identifier, as rkt 1.x
// required; one with control characters (printed by rkt migrate, logged)
// or upper case is refused.
func TestACINameChecked(t *testing.T) {
	dir := t.TempDir()
	for name, ok := range map[string]bool{
		"example.com/app-1_2~x": true, "busybox": true,
		"evil\x1b]0;pwned\x07": false, "Example.com/App": false, "a//b": false, "/abs": false, "a b": false,
	} {
		p := filepath.Join(dir, "x.aci")
		if err := os.WriteFile(p, aciBytes(t, aciManifest(name, "1", "/x"), nil), 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := ReadACIManifest(p)
		if ok != (err == nil) || (!ok && !errors.Is(err, ErrUnsupportedACI)) {
			t.Errorf("%q: %v, %v", name, m, err)
		}
		if err != nil && strings.ContainsAny(err.Error(), "\x1b\x07") {
			t.Errorf("%q: the error carries control characters: %q", name, err)
		}
	}
}

// TestLegacyACIKeyChecked: an ACI of rkt 1.x's store whose tar is not what
// its key says (changed after rkt 1.x stored it) is not imported, nor an
// ACI that depends on it; the import fails (it is not skipped).
func TestLegacyACIKeyChecked(t *testing.T) {
	data := t.TempDir()
	base := putLegacyACI(t, data, aciBytes(t, aciManifest("example.com/base", "1", "/x"), []entry{{name: "x", body: "original"}}))
	app := aciManifest("example.com/app", "1", "/x")
	app["dependencies"] = []map[string]any{{"imageName": "example.com/base", "imageID": base}}
	appKey := putLegacyACI(t, data, aciBytes(t, app, nil))
	good := putLegacyACI(t, data, aciBytes(t, aciManifest("example.com/good", "1", "/x"), nil))
	basePath := filepath.Join(data, "cas", "blob", "sha512", base[7:9], base)
	if err := os.WriteFile(basePath, aciBytes(t, aciManifest("example.com/base", "1", "/x"), []entry{{name: "x", body: "trojan"}}), 0o660); err != nil {
		t.Fatal(err)
	}
	l, err := FindLegacy(data)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.ImportLegacy(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		switch r.Key {
		case base, appKey:
			if r.Image != nil || !errors.Is(r.Err, ErrACIKeyMismatch) {
				t.Errorf("%s: image %v, error %v; want ErrACIKeyMismatch", r.Name, r.Image, r.Err)
			}
		case good:
			if r.Image == nil {
				t.Errorf("%s: %v %s", r.Name, r.Err, r.Skip)
			}
		}
	}
	if imgs, _ := s.ListImages(); len(imgs) != 1 {
		t.Errorf("%d images, want 1", len(imgs))
	}
}

// TestACIChangedWhileRead: the image config comes from the ACI that its
// key vouches for, even when the file is swapped between the reading of
// its manifest (the config, the dependencies) and of its rootfs (checked
// against the key): here the manifest read first runs something else, and
// the original is back when the rootfs is read.
func TestACIChangedWhileRead(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.aci")
	if err := os.WriteFile(base, aciBytes(t, aciManifest("example.com/base", "1", "/x"), nil), 0o600); err != nil {
		t.Fatal(err)
	}
	m := aciManifest("example.com/top", "1", "/bin/app")
	m["dependencies"] = []map[string]any{{"imageName": "example.com/base", "imageID": "base"}}
	rootfs := []entry{{name: "bin", typ: tar.TypeDir}, {name: "bin/app", body: "app"}}
	original := aciBytes(t, m, rootfs)
	sum := sha512.Sum512(original)
	key := "sha512-" + hex.EncodeToString(sum[:])[:64]
	m["app"].(map[string]any)["exec"] = []string{"/bin/evil"}
	top := filepath.Join(dir, key)
	if err := os.WriteFile(top, aciBytes(t, m, rootfs), 0o600); err != nil {
		t.Fatal(err)
	}
	dep := func(id string) (string, error) {
		if err := os.WriteFile(top, original, 0o600); err != nil { // the manifest was read
			t.Fatal(err)
		}
		return base, nil
	}
	s := newStore(t)
	img, err := s.ImportACI(context.Background(), top, ACIOptions{Dependency: dep, Key: func(p string) string {
		if p == top {
			return key
		}
		return ""
	}}, FetchOptions{})
	if !errors.Is(err, ErrACIChanged) {
		t.Errorf("import: %v; want ErrACIChanged", err)
		if img != nil {
			t.Errorf("entrypoint %v", img.Config.Config.Entrypoint)
		}
	}
	if imgs, _ := s.ListImages(); len(imgs) != 0 {
		t.Errorf("%d images recorded", len(imgs))
	}
}

func TestIsACIdentifier(t *testing.T) {
	for s, want := range map[string]bool{
		"example.com/app": true, "a": true, "a-b_c": true, "a~b/c.d-e": true,
		"": false, "-a": false, "a-": false, "a--b": false, "A": false, "a\x1bb": false, "a/": false,
	} {
		if got := isACIdentifier(s); got != want {
			t.Errorf("isACIdentifier(%q) = %v, want %v", s, got, want)
		}
	}
}
