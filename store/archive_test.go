package store

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/rkt/rkt/pkg/tarx"
)

func writeLayout(t *testing.T, img v1.Image, annotations map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(annotations)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tarDir writes the regular files of dir as a tar (an oci-archive).
func tarDir(t *testing.T, dir, out string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h, _ := tar.FileInfoHeader(fi, "")
		h.Name = rel
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			tw.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tw.Close()
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestArchives(t *testing.T) {
	img := testImage(t, "ARCHIVE=1", []entry{{name: "a", body: "archived"}}, []entry{{name: "b", body: "second"}})
	id := mustDigest(t, img.ConfigName)
	ctx := context.Background()

	layoutDir := writeLayout(t, img, map[string]string{"org.opencontainers.image.ref.name": "v1"})
	ociArchive := filepath.Join(t.TempDir(), "img.oci.tar")
	tarDir(t, layoutDir, ociArchive)
	dockerArchive := filepath.Join(t.TempDir(), "img.docker.tar")
	tag, _ := name.NewTag("example.com/team/app:2.0")
	if err := tarball.WriteToFile(dockerArchive, tag, img); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		ref, fetchName string
		wantNames      []string
		sameID         bool
	}{
		{ref: "oci:" + layoutDir, wantNames: nil, sameID: true},
		{ref: "oci:" + layoutDir + ":v1", fetchName: "local/app:v1", wantNames: []string{"docker.io/local/app:v1"}, sameID: true},
		{ref: "oci-archive:" + ociArchive, fetchName: "quay.io/x/y:z", wantNames: []string{"quay.io/x/y:z"}, sameID: true},
		{ref: "oci-archive:" + ociArchive + ":v1", sameID: true},
		// docker save stores uncompressed layers: same config, so same ID.
		{ref: "docker-archive:" + dockerArchive, wantNames: []string{"example.com/team/app:2.0"}, sameID: true},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			s := newStore(t)
			if _, err := s.Fetch(ctx, tc.ref, FetchOptions{RegistryOnly: true}); !errors.Is(err, ErrInvalidRef) {
				t.Errorf("registry-only fetch of a local file: %v, want ErrInvalidRef", err)
			}
			if imgs, _ := s.ListImages(); len(imgs) != 0 {
				t.Errorf("registry-only fetch stored %d images", len(imgs))
			}
			got, err := s.Fetch(ctx, tc.ref, FetchOptions{Name: tc.fetchName, PullPolicy: PullNever})
			if err != nil {
				t.Fatal(err)
			}
			if tc.sameID && got.ID != id {
				t.Errorf("ID = %s, want %s", got.ID, id)
			}
			if len(got.Names) != len(tc.wantNames) || (len(tc.wantNames) > 0 && got.Names[0] != tc.wantNames[0]) {
				t.Errorf("Names = %v, want %v", got.Names, tc.wantNames)
			}
			dest := filepath.Join(t.TempDir(), "rootfs")
			if err := s.RenderFlat(ctx, got, dest); err != nil {
				t.Fatal(err)
			}
			mustFile(t, filepath.Join(dest, "a"), "archived")
			mustFile(t, filepath.Join(dest, "b"), "second")
		})
	}
	if _, err := newStore(t).Fetch(ctx, "oci:"+layoutDir+":nope", FetchOptions{}); err == nil {
		t.Error("fetch of a missing layout tag succeeded")
	}
}

func TestExportRoundTrip(t *testing.T) {
	reg := startRegistry(t)
	img := testImage(t, "E=1", []entry{{name: "e", body: "exported"}})
	ref := reg.push(t, "exp/img:1", img)
	ctx := context.Background()
	s := newStore(t)
	got, err := s.Fetch(ctx, ref, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.tar")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ExportOCIArchive(ctx, got, got.Names[0], f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s2 := newStore(t)
	back, err := s2.Fetch(ctx, "oci-archive:"+out, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != got.ID || back.ManifestDigest != got.ManifestDigest {
		t.Errorf("round trip: %s/%s, want %s/%s", back.ID, back.ManifestDigest, got.ID, got.ManifestDigest)
	}
	if len(back.Names) != 1 || back.Names[0] != got.Names[0] {
		t.Errorf("round trip names %v, want %v", back.Names, got.Names)
	}
	m1, _ := s.Manifest(got)
	m2, _ := s2.Manifest(back)
	c1, _ := s.ConfigJSON(got)
	if !bytes.Equal(m1, m2) || digestOf(c1) != got.ID {
		t.Error("manifest or config differ after the round trip")
	}
}

func mustFile(t *testing.T, p, want string) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	if string(b) != want {
		t.Errorf("%s = %q, want %q", p, b, want)
	}
}

func TestLayoutWithPlatformIndex(t *testing.T) {
	host := platform(FetchOptions{})
	mine := testImage(t, "ARCH=mine", []entry{{name: "arch", body: "mine"}})
	other := testImage(t, "ARCH=other", []entry{{name: "arch", body: "other"}})
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "s390x"}}},
		mutate.IndexAddendum{Add: mine, Descriptor: v1.Descriptor{Platform: &host}},
	)
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": "1.0",
		"io.containerd.image.name":          "example.com/multi:1.0",
	})); err != nil {
		t.Fatal(err)
	}
	got, err := newStore(t).Fetch(context.Background(), "oci:"+dir+":1.0", FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != mustDigest(t, mine.ConfigName) {
		t.Errorf("got %s, want this platform's image", got.ID)
	}
	if len(got.Names) != 1 || got.Names[0] != "example.com/multi:1.0" {
		t.Errorf("Names = %v", got.Names)
	}
}

// TestHostileOCIArchiveStaysInside: an archive with a name leaving the
// directory is refused and writes nothing outside.
func TestHostileOCIArchiveStaysInside(t *testing.T) {
	img := testImage(t, "X=1", []entry{{name: "x", body: "x"}})
	layoutDir := writeLayout(t, img, nil)
	base := t.TempDir()
	archive := filepath.Join(base, "a.tar")
	tarDir(t, layoutDir, archive)
	// Append entries aimed outside the extraction directory.
	raw, _ := os.ReadFile(archive)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		tw.WriteHeader(h)
		io.Copy(tw, tr)
	}
	for _, n := range []string{"../../evil", "/abs-evil"} {
		tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: 4})
		tw.Write([]byte("evil"))
	}
	tw.WriteHeader(&tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/"})
	tw.Close()
	os.WriteFile(archive, buf.Bytes(), 0o644)
	s := newStore(t)
	if _, err := s.Fetch(context.Background(), "oci-archive:"+archive, FetchOptions{}); !errors.Is(err, tarx.ErrUnsafePath) {
		t.Errorf("fetch: %v, want ErrUnsafePath", err)
	}
	if imgs, _ := s.ListImages(); len(imgs) != 0 {
		t.Errorf("%d images recorded", len(imgs))
	}
	for _, p := range []string{filepath.Join(filepath.Dir(s.Dir()), "evil"), filepath.Join(s.Dir(), "evil"), "/abs-evil", filepath.Join(base, "evil")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("hostile archive wrote %s", p)
		}
	}
}

func TestLayoutWithOneImagePerPlatform(t *testing.T) {
	host := platform(FetchOptions{})
	mine := testImage(t, "ARCH=mine", []entry{{name: "arch", body: "mine"}})
	other := testImage(t, "ARCH=other", []entry{{name: "arch", body: "other"}})
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(other, layout.WithPlatform(v1.Platform{OS: "linux", Architecture: "s390x"})); err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(mine, layout.WithPlatform(host)); err != nil {
		t.Fatal(err)
	}
	got, err := newStore(t).Fetch(context.Background(), "oci:"+dir, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != mustDigest(t, mine.ConfigName) {
		t.Errorf("got %s, want this platform's image", got.ID)
	}
}

func TestMultiImageDockerArchive(t *testing.T) {
	a := testImage(t, "WHICH=a", []entry{{name: "w", body: "a"}})
	b := testImage(t, "WHICH=b", []entry{{name: "w", body: "b"}})
	ta, _ := name.NewTag("example.com/multi/a:1")
	tb, _ := name.NewTag("example.com/multi/b:1")
	path := filepath.Join(t.TempDir(), "two.tar")
	if err := tarball.MultiWriteToFile(path, map[name.Tag]v1.Image{ta: a, tb: b}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := newStore(t).Fetch(ctx, "docker-archive:"+path, FetchOptions{}); err == nil {
		t.Error("ambiguous multi-image archive accepted")
	}
	got, err := newStore(t).Fetch(ctx, "docker-archive:"+path+":example.com/multi/b:1", FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != mustDigest(t, b.ConfigName) || len(got.Names) != 1 || got.Names[0] != "example.com/multi/b:1" {
		t.Errorf("got %s %v, want image b", got.ID, got.Names)
	}
	if _, err := newStore(t).Fetch(ctx, "docker-archive:"+path+":example.com/multi/c:1", FetchOptions{}); err == nil {
		t.Error("missing image in archive accepted")
	}
}
