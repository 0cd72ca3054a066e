package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/tests/testutil"
)

// fakePodUsing writes a prepared pod whose manifest references image id,
// as stage0 would, so that image rm/gc see the image in use. It returns a
// function that removes the pod.
func fakePodUsing(t *testing.T, env *testutil.Env, id string) func() {
	t.Helper()
	dir := filepath.Join(env.DataDir, "pods", "prepared", "11111111-2222-3333-4444-555555555555")
	// an app's directory comes before the manifest lists it (an app listed
	// without it was removed)
	if err := os.MkdirAll(string(schema.PodDir(dir).App("app")), 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(schema.PodManifest{Version: schema.Version, UUID: filepath.Base(dir),
		Apps: []schema.App{{Name: "app", Image: schema.AppImage{ID: id}}}})
	if err := os.WriteFile(schema.PodDir(dir).Manifest(), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return func() { os.RemoveAll(filepath.Join(env.DataDir, "pods")) }
}

// TestImageListRm covers the table, JSON and legend options, and rm by ID,
// ID prefix and name, every tag removed, and the in-use refusal.
func TestImageListRm(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	a := testutil.BusyboxWith(t, testutil.ImageConfig{}, testutil.Layer(t, testutil.File("a", "a")))
	b := testutil.BusyboxWith(t, testutil.ImageConfig{}, testutil.Layer(t, testutil.File("b", "b")))
	c := testutil.BusyboxWith(t, testutil.ImageConfig{}, testutil.Layer(t, testutil.File("c", "c")))
	idA := env.Fetch(reg.Push(t, "a:1", a))
	reg.Push(t, "a:2", a)
	env.Fetch(reg.Ref("a:2"))
	idB := env.Fetch(reg.Push(t, "b:1", b))
	idC := env.Fetch(reg.Push(t, "c:1", c))

	table := env.RunOK("image", "list").Stdout
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("want a header and 4 rows (a:1, a:2, b:1, c:1):\n%s", table)
	}
	short := strings.TrimPrefix(idA, "sha256:")[:12]
	if !strings.Contains(table, short) || strings.Contains(table, idA) {
		t.Errorf("table should show short IDs:\n%s", table)
	}
	if out := env.RunOK("image", "list", "--full", "--no-legend").Stdout; !strings.Contains(out, idA) || strings.Contains(out, "IMPORT TIME") {
		t.Errorf("--full --no-legend:\n%s", out)
	}
	imgs := env.ListImages()
	if len(imgs) != 3 {
		t.Fatalf("JSON lists %d images, want 3", len(imgs))
	}
	for _, im := range imgs {
		if im.Size <= 0 || im.ImportedAt.IsZero() || time.Since(im.ImportedAt) > time.Hour {
			t.Errorf("bad size or import time: %+v", im)
		}
	}
	env.RunFail("image", "list", "--format=yaml")

	// In use: refused, then forced.
	cleanup := fakePodUsing(t, env, idC)
	r := env.RunFail("image", "rm", idC)
	if !strings.Contains(r.Stderr, "in use") {
		t.Errorf("in-use refusal does not say why: %s", r.Stderr)
	}
	env.RunOK("image", "rm", "--force", idC)
	cleanup()

	// By name: every tag of the image goes.
	env.RunOK("image", "rm", reg.Ref("a:2"))
	if env.FindImage(idA) != nil {
		t.Errorf("image a still listed after rm by name")
	}
	env.RunFail("fetch", "--no-progress", "--pull-policy=never", reg.Ref("a:1"))
	// By ID prefix.
	env.RunOK("image", "rm", strings.TrimPrefix(idB, "sha256:")[:10])
	if n := len(env.ListImages()); n != 0 {
		t.Errorf("%d images left", n)
	}
	env.RunFail("image", "rm", idB)
	env.RunFail("image", "rm", "nosuchimage:1")
	// Nothing of the removed images is left in the store once gc ran (the
	// forced removal keeps the in-use image's trees until then).
	env.RunOK("image", "gc", "--grace-period=0s")
	if blobs := dirEntries(t, casDir(env.DataDir, "blobs", "sha256")); len(blobs) != 0 {
		t.Errorf("blobs left after removing every image: %v", blobs)
	}
	if trees := dirEntries(t, casDir(env.DataDir, "tree")); len(trees) != 0 {
		t.Errorf("trees left after removing every image: %v", trees)
	}
}

// TestImageGC removes unused images past the grace period, keeps images in
// use and recent ones.
func TestImageGC(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	used := env.Fetch(reg.Push(t, "used:1", testutil.BusyboxWith(t, testutil.ImageConfig{}, testutil.Layer(t, testutil.File("u", "u")))))
	unused := env.Fetch(reg.Push(t, "unused:1", testutil.BusyboxWith(t, testutil.ImageConfig{}, testutil.Layer(t, testutil.File("n", "n")))))
	defer fakePodUsing(t, env, used)()

	env.RunOK("image", "gc") // default grace 24h: both recent
	if len(env.ListImages()) != 2 {
		t.Fatalf("image gc with the default grace period removed a fresh image")
	}
	out := env.RunOK("image", "gc", "--grace-period=0s").Stdout
	if !strings.Contains(out, unused) {
		t.Errorf("gc output does not name the removed image:\n%s", out)
	}
	if env.FindImage(unused) != nil || env.FindImage(used) == nil {
		t.Errorf("gc kept the wrong images: %+v", env.ListImages())
	}
	// The used image's layers are intact: it still renders.
	env.RunOK("image", "render", used, filepath.Join(env.Root, "r"))
	assertFile(t, filepath.Join(env.Root, "r", "u"), "u")
	env.RunFail("image", "gc", "--grace-period=soon")
}

// TestImageCatManifestExportRender checks the manifest bytes against the
// registry digest, round-trips an export, and renders whiteouts away.
func TestImageCatManifestExportRender(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	img := testutil.BusyboxWith(t, testutil.ImageConfig{Entrypoint: []string{"/bin/true"}},
		testutil.Layer(t, testutil.Dir("opt"), testutil.File("opt/keep", "keep"), testutil.File("opt/gone", "gone"),
			testutil.Hardlink("opt/hard", "opt/keep"), testutil.Dir("old"), testutil.File("old/f", "f")),
		testutil.Layer(t, testutil.Whiteout("opt/gone"), testutil.OpaqueWhiteout("old"), testutil.File("old/new", "new"),
			testutil.Symlink("opt/link", "keep")))
	id := env.Fetch(reg.Push(t, "render:1", img))

	raw := env.RunOK("image", "cat-manifest", "--pretty-print=false", reg.Ref("render:1")).Stdout
	sum := sha256.Sum256([]byte(raw))
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != testutil.ManifestDigest(t, img) {
		t.Errorf("cat-manifest bytes digest to %s, want %s", got, testutil.ManifestDigest(t, img))
	}
	pretty := env.RunOK("image", "cat-manifest", id).Stdout
	if !strings.Contains(pretty, "\n  \"") || !strings.Contains(pretty, "layers") {
		t.Errorf("pretty manifest:\n%s", pretty)
	}
	env.RunFail("image", "cat-manifest", "sha256:"+strings.Repeat("0", 64))

	// Export, then import into another store: same ID.
	out := filepath.Join(env.Root, "export.tar")
	env.RunOK("image", "export", id, out)
	env.RunFail("image", "export", id, out) // exists
	env.RunOK("image", "export", "--overwrite", id, out)
	// the invoker's umask decides who else reads the archive
	mask := syscall.Umask(0o077)
	env.RunOK("image", "export", "--overwrite", id, out)
	syscall.Umask(mask)
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("export under umask 077: %v %v, want mode 0600", fi.Mode(), err)
	}
	env2 := testutil.NewEnv(t)
	if got := env2.Fetch("oci-archive:" + out); got != id {
		t.Errorf("re-imported export has ID %s, want %s", got, id)
	}

	// Render: layers applied in order, whiteouts gone, links kept.
	root := filepath.Join(env.Root, "rootfs")
	env.RunOK("image", "render", id, root)
	assertFile(t, filepath.Join(root, "opt/keep"), "keep")
	assertFile(t, filepath.Join(root, "opt/hard"), "keep")
	assertMissing(t, filepath.Join(root, "opt/gone"))
	assertMissing(t, filepath.Join(root, "old/f"))
	assertFile(t, filepath.Join(root, "old/new"), "new")
	if l, err := os.Readlink(filepath.Join(root, "opt/link")); err != nil || l != "keep" {
		t.Errorf("opt/link: %q %v", l, err)
	}
	if fi, err := os.Stat(filepath.Join(root, "bin/busybox")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("bin/busybox: %v %v", fi, err)
	}
	for _, d := range []string{root, filepath.Join(root, "opt"), filepath.Join(root, "old")} {
		for _, n := range dirEntries(t, d) {
			if strings.HasPrefix(n, ".wh.") {
				t.Errorf("whiteout %s left in %s", n, d)
			}
		}
	}
	env.RunFail("image", "render", id, root) // not empty
	env.RunOK("image", "render", "--overwrite", id, root)
	assertFile(t, filepath.Join(root, "old/new"), "new")
}
