package store

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/klauspost/compress/gzip"
)

// aciBytes builds an ACI: its manifest and files under rootfs/.
func aciBytes(t testing.TB, manifest map[string]any, files []entry) []byte {
	t.Helper()
	m, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	entries := []entry{{name: "manifest", body: string(m)}, {name: "rootfs", typ: tar.TypeDir}}
	for _, f := range files {
		f.name = "rootfs/" + f.name
		if f.typ == tar.TypeLink {
			f.linkname = "rootfs/" + f.linkname
		}
		entries = append(entries, f)
	}
	return tarBytes(t, entries)
}

func aciManifest(name, version string, exec ...string) map[string]any {
	return map[string]any{
		"acKind": "ImageManifest", "acVersion": "0.8.11", "name": name,
		"labels": []map[string]string{{"name": "version", "value": version}, {"name": "os", "value": "linux"}, {"name": "arch", "value": "amd64"}},
		"app": map[string]any{
			"exec": exec, "user": "0", "group": "0", "workingDirectory": "/work",
			"environment": []map[string]string{{"name": "GREETING", "value": "hi"}},
			"ports":       []map[string]any{{"name": "http", "protocol": "tcp", "port": 80}},
		},
	}
}

// putLegacyACI stores b as rkt 1.x would: at its key (half a SHA-512).
func putLegacyACI(t testing.TB, dataDir string, b []byte) string {
	t.Helper()
	sum := sha512.Sum512(b)
	key := "sha512-" + hex.EncodeToString(sum[:])[:64]
	dir := filepath.Join(dataDir, "cas", "blob", "sha512", key[7:9])
	if err := os.MkdirAll(dir, 0o2770); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, key), b, 0o660); err != nil {
		t.Fatal(err)
	}
	return key
}

func TestACIReference(t *testing.T) {
	for _, c := range []struct{ name, version, want string }{
		{"example.com/busybox", "1.36", "example.com/busybox:1.36"},
		{"busybox", "", "localhost/busybox:latest"},
		{"acme/app", "v1.0+git3", "localhost/acme/app:v1.0_git3"},
		{"registry-1.docker.io/library/nginx", "latest", "docker.io/library/nginx:latest"},
		{"quay.io/coreos/etcd", "v3.1.0", "quay.io/coreos/etcd:v3.1.0"},
	} {
		m := &ACIManifest{Name: c.name}
		if c.version != "" {
			m.Labels = []aciKV{{"version", c.version}}
		}
		got, err := ACIReference(m)
		if err != nil || got != c.want {
			t.Errorf("ACIReference(%s, %s) = %q, %v; want %q", c.name, c.version, got, err, c.want)
		}
	}
}

func TestImportACI(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	dir := t.TempDir()
	plain := aciBytes(t, aciManifest("example.com/hello", "1.0", "/bin/hello", "world"), []entry{
		{name: "bin", typ: tar.TypeDir}, {name: "bin/hello", body: "#!hello", mode: 0o755},
		{name: "bin/hi", typ: tar.TypeLink, linkname: "bin/hello"},
	})
	p := filepath.Join(dir, "hello.aci")
	if err := os.WriteFile(p, plain, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := s.Fetch(ctx, "aci:"+p, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(img.Names, []string{"example.com/hello:1.0"}) {
		t.Errorf("names %v", img.Names)
	}
	c := img.Config.Config
	if !slices.Equal(c.Entrypoint, []string{"/bin/hello", "world"}) || c.User != "0:0" || c.WorkingDir != "/work" ||
		!slices.Contains(c.Env, "GREETING=hi") || c.Labels["io.rkt.aci.name"] != "example.com/hello" {
		t.Errorf("config %+v", c)
	}
	if _, ok := c.ExposedPorts["80/tcp"]; !ok {
		t.Errorf("exposed ports %v", c.ExposedPorts)
	}
	paths, err := s.LayerPaths(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(paths[0], "bin/hi")); err != nil || string(b) != "#!hello" {
		t.Errorf("bin/hi of the layer: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(paths[0], "manifest")); !os.IsNotExist(err) {
		t.Errorf("the ACI manifest is in the rootfs: %v", err)
	}

	// The same ACI gzip-compressed is the same image.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain)
	zw.Close()
	pgz := filepath.Join(dir, "hello.aci.gz")
	if err := os.WriteFile(pgz, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := s.ImportACI(ctx, pgz, ACIOptions{}, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != img.ID {
		t.Errorf("gzip ACI is image %s, the plain one %s", again.ID, img.ID)
	}

	// Not an ACI: refused, nothing stored.
	bad := filepath.Join(dir, "bad.aci")
	os.WriteFile(bad, tarBytes(t, []entry{{name: "rootfs/x", body: "x"}}), 0o644)
	if _, err := s.Fetch(ctx, "aci:"+bad, FetchOptions{}); err == nil {
		t.Error("an ACI without manifest was imported")
	}
	if imgs, _ := s.ListImages(); len(imgs) != 1 {
		t.Errorf("%d images, want 1", len(imgs))
	}
}

func TestImportLegacy(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	base := putLegacyACI(t, data, aciBytes(t, map[string]any{"acKind": "ImageManifest", "acVersion": "0.8.11", "name": "example.com/base"},
		[]entry{{name: "etc", typ: tar.TypeDir}, {name: "etc/os-release", body: "base"}, {name: "etc/motd", body: "from base"}}))
	app := aciManifest("example.com/app", "2", "/bin/app")
	app["dependencies"] = []map[string]any{{"imageName": "example.com/base", "imageID": base + "0123"}}
	appKey := putLegacyACI(t, data, aciBytes(t, app, []entry{{name: "etc", typ: tar.TypeDir}, {name: "etc/motd", body: "from app"}}))
	byName := aciManifest("example.com/byname", "1", "/bin/x")
	byName["dependencies"] = []map[string]any{{"imageName": "example.com/base"}}
	byNameKey := putLegacyACI(t, data, aciBytes(t, byName, nil))
	stage1Key := putLegacyACI(t, data, aciBytes(t, map[string]any{"acKind": "ImageManifest", "acVersion": "0.8.11", "name": "coreos.com/rkt/stage1-coreos"}, nil))
	tree := filepath.Join(data, "cas", "tree", "deps-"+appKey)
	if err := os.MkdirAll(filepath.Join(tree, "rootfs"), 0o700); err != nil {
		t.Fatal(err)
	}
	longAgo := time.Now().Add(-48 * time.Hour)
	os.Chtimes(tree, longAgo, longAgo)

	l, err := FindLegacy(data)
	if err != nil || l == nil {
		t.Fatalf("FindLegacy: %v, %v", l, err)
	}
	if len(l.Images) != 4 || len(l.Trees) != 1 || l.Imported != nil {
		t.Fatalf("found %d images, %d trees, imported %v", len(l.Images), len(l.Trees), l.Imported)
	}
	s, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.ImportLegacy(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]LegacyImport{}
	for _, r := range res {
		got[r.Key] = r
	}
	if r := got[appKey]; r.Image == nil || len(r.Image.Layers) != 2 {
		t.Fatalf("app: %+v", r)
	}
	if r := got[base]; r.Image == nil {
		t.Errorf("base: %+v", r)
	}
	if r := got[byNameKey]; r.Image != nil || r.Skip == "" || r.Err != nil {
		t.Errorf("dependency by name only: %+v", r)
	}
	if r := got[stage1Key]; r.Image != nil || r.Skip == "" {
		t.Errorf("stage1: %+v", r)
	}
	paths, err := s.LayerPaths(ctx, got[appKey].Image)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(paths[1], "etc/motd")); string(b) != "from app" {
		t.Errorf("top layer etc/motd: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(paths[0], "etc/os-release")); string(b) != "base" {
		t.Errorf("base layer etc/os-release: %q", b)
	}
	l2, err := FindLegacy(data)
	if err != nil || l2.Imported == nil || l2.Imported.Images[appKey] != got[appKey].Image.ID {
		t.Errorf("the import is not recorded: %+v, %v", l2, err)
	}
	// The store's GC and sweep leave rkt 1.x's files alone.
	if _, err := s.GC(ctx, time.Nanosecond, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SweepUnreferenced(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tree); err != nil {
		t.Errorf("GC removed rkt 1.x's tree: %v", err)
	}
	for _, li := range l.Images {
		if _, err := os.Stat(li.Path); err != nil {
			t.Errorf("rkt 1.x's ACI %s: %v", li.Key, err)
		}
	}
}

// TestACILayerAsTarball: the layer of an ACI has the digests, size and
// media type tarball.LayerFromFile gave it (ImportACI used it), so an ACI
// imported again is the image it was.
func TestACILayerAsTarball(t *testing.T) {
	p := filepath.Join(t.TempDir(), "layer.tar")
	files := []entry{{name: "bin", typ: tar.TypeDir}, {name: "bin/hello", body: strings.Repeat("hello ", 5000), mode: 0o755}}
	if err := os.WriteFile(p, tarBytes(t, files), 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := tarball.LayerFromFile(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := aciLayerOf(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []v1.Layer{want, got} {
		d, err1 := l.Digest()
		id, err2 := l.DiffID()
		n, err3 := l.Size()
		mt, err4 := l.MediaType()
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			t.Fatal(err)
		}
		t.Logf("digest %s diff ID %s size %d media type %s", d, id, n, mt)
	}
	wd, _ := want.Digest()
	gd, _ := got.Digest()
	wid, _ := want.DiffID()
	gid, _ := got.DiffID()
	wn, _ := want.Size()
	gn, _ := got.Size()
	wmt, _ := want.MediaType()
	gmt, _ := got.MediaType()
	if wd != gd || wid != gid || wn != gn || wmt != gmt {
		t.Errorf("ACI layer %s %s %d %s, tarball's %s %s %d %s", gd, gid, gn, gmt, wd, wid, wn, wmt)
	}
}
