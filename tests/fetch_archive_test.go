package tests

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/rkt/rkt/tests/testutil"
)

// TestFetchArchives imports the same image from an oci-archive, a
// docker-archive (docker save and crane save flavours) and an OCI layout
// (by tag and alone): every import yields the registry's image ID.
func TestFetchArchives(t *testing.T) {
	img := testutil.BusyboxWith(t, testutil.ImageConfig{Labels: map[string]string{"fmt": "archive"}},
		testutil.Layer(t, testutil.File("etc/marker", "archive"), testutil.Dir("data")),
		testutil.Layer(t, testutil.Whiteout("etc/marker"), testutil.File("data/x", "x")))
	id := testutil.ImageID(t, img)
	dir := t.TempDir()

	oci := filepath.Join(dir, "img.oci.tar")
	testutil.WriteOCIArchive(t, oci, img, "v1")
	docker := filepath.Join(dir, "img.docker.tar")
	testutil.WriteDockerArchive(t, docker, "example.com/team/app:1.2", img)
	docker25 := filepath.Join(dir, "img.docker25.tar")
	testutil.WriteDockerArchiveOCI(t, docker25, "example.com/team/app:25", img)
	crane := filepath.Join(dir, "img.crane.tar")
	testutil.WriteDockerArchiveGGCR(t, crane, "example.com/team/app:1.3", img)
	layoutDir := filepath.Join(dir, "layout")
	testutil.WriteOCILayout(t, layoutDir, testutil.Busybox(t), "other")
	testutil.WriteOCILayout(t, layoutDir, img, "v2")
	single := filepath.Join(dir, "single")
	testutil.WriteOCILayout(t, single, img, "")
	multiArchive := filepath.Join(dir, "multi.oci.tar")
	if err := testutil.TarDir(layoutDir, multiArchive); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, ref string
		wantName  string // a name the image must carry afterwards ("" = none checked)
	}{
		{"oci-archive", "oci-archive:" + oci, ""},
		{"docker-archive", "docker-archive:" + docker, "example.com/team/app:1.2"},
		{"docker-archive-compressed", "docker-archive:" + crane, "example.com/team/app:1.3"},
		{"docker-archive-docker25", "docker-archive:" + docker25, "example.com/team/app:25"},
		{"oci-archive-docker25", "oci-archive:" + docker25, ""}, // Docker 25's save is an OCI layout too
		{"oci-layout-tag", "oci:" + layoutDir + ":v2", ""},
		{"oci-layout-single", "oci:" + single, ""},
		{"oci-archive-tag", "oci-archive:" + multiArchive + ":v2", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testutil.NewEnv(t)
			if got := env.Fetch(tc.ref); got != id {
				t.Fatalf("fetch %s printed %s, want %s", tc.ref, got, id)
			}
			info := env.FindImage(id)
			if info == nil {
				t.Fatalf("image not listed")
			}
			if tc.wantName != "" && !slices.Contains(info.Names, tc.wantName) {
				t.Errorf("names %v lack %s", info.Names, tc.wantName)
			}
			// The layers unpack and render: the whiteout removed the marker.
			root := filepath.Join(env.Root, "render")
			env.RunOK("image", "render", id, root)
			assertFile(t, filepath.Join(root, "data/x"), "x")
			assertMissing(t, filepath.Join(root, "etc/marker"))
		})
	}

	t.Run("errors", func(t *testing.T) {
		env := testutil.NewEnv(t)
		env.RunFail("fetch", "--no-progress", "oci-archive:"+filepath.Join(dir, "nope.tar"))
		env.RunFail("fetch", "--no-progress", "docker-archive:"+oci) // wrong format
		env.RunFail("fetch", "--no-progress", "oci:"+layoutDir+":missing-tag")
		env.RunFail("fetch", "--no-progress", "oci:"+layoutDir)                  // two images, no tag: ambiguous
		env.RunFail("fetch", "--no-progress", "oci-archive:"+multiArchive)       // likewise
		env.RunFail("fetch", "--no-progress", "oci-archive:"+multiArchive+":v9") // no such tag
		if n := len(env.ListImages()); n != 0 {
			t.Errorf("failed imports left %d images", n)
		}
	})
}
