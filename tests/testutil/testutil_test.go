package testutil

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestBusyboxImageIsDeterministic(t *testing.T) {
	a, b := Busybox(t), Busybox(t)
	if ImageID(t, a) != ImageID(t, b) || ManifestDigest(t, a) != ManifestDigest(t, b) {
		t.Fatalf("two builds differ: %s %s", ImageID(t, a), ImageID(t, b))
	}
	mt, _ := a.MediaType()
	if !strings.Contains(string(mt), "oci") {
		t.Errorf("media type %s, want OCI", mt)
	}
	// The layer has /bin/busybox and sh as a hard link to it.
	rd := tar.NewReader(bytes.NewReader(BusyboxTar(t)))
	found := map[string]*tar.Header{}
	for {
		h, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		found[h.Name] = h
	}
	if h := found["bin/sh"]; h == nil || h.Typeflag != tar.TypeLink || h.Linkname != "bin/busybox" {
		t.Errorf("bin/sh is not a hard link to bin/busybox: %+v", h)
	}
	if found["etc/passwd"] == nil || found["bin/busybox"] == nil {
		t.Errorf("base layer misses files")
	}
}

func TestRegistryAuth(t *testing.T) {
	img := Busybox(t)
	for _, tc := range []struct {
		name string
		opts []RegistryOption
	}{
		{"anonymous", nil},
		{"basic", []RegistryOption{WithBasicAuth("alice", "s3cret")}},
		{"token", []RegistryOption{WithTokenAuth("bob", "t0ken")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := StartRegistry(t, tc.opts...)
			ref := reg.Push(t, "test/busybox:1", img)
			r, _ := name.ParseReference(ref)
			var opts []remote.Option
			if reg.user != "" {
				if _, err := remote.Image(r); err == nil {
					t.Fatalf("anonymous pull succeeded against an auth registry")
				}
				opts = append(opts, remote.WithAuth(&authn.Basic{Username: reg.user, Password: reg.pass}))
			}
			got, err := remote.Image(r, opts...)
			if err != nil {
				t.Fatalf("pull: %v", err)
			}
			if ImageID(t, got) != ImageID(t, img) {
				t.Fatalf("pulled a different image")
			}
		})
	}
}

func TestSlowRegistry(t *testing.T) {
	reg := StartRegistry(t)
	ref := reg.Push(t, "slow:1", Image(t, ImageConfig{}, RandomLayer(t, 1, "r", 1, 64<<10)))
	reg.SetBlobRate(128 << 10)
	r, _ := name.ParseReference(ref)
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := img.Layers()
	start := time.Now()
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, rc)
	rc.Close()
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("64 KiB at 128 KiB/s took only %s", d)
	}
	if reg.CountRequests("/blobs/") == 0 {
		t.Errorf("requests not recorded: %v", reg.Requests())
	}
}

func TestArchivesRoundTrip(t *testing.T) {
	img := BusyboxWith(t, ImageConfig{Labels: map[string]string{"a": "b"}}, Layer(t, File("etc/marker", "m")))
	dir := t.TempDir()

	docker := filepath.Join(dir, "docker.tar")
	WriteDockerArchive(t, docker, "example.com/x:1", img)
	tag, _ := name.NewTag("example.com/x:1")
	got, err := tarball.ImageFromPath(docker, &tag)
	if err != nil {
		t.Fatalf("read docker-archive: %v", err)
	}
	if ImageID(t, got) != ImageID(t, img) {
		t.Errorf("docker-archive changed the image ID")
	}

	lay := filepath.Join(dir, "layout")
	WriteOCILayout(t, lay, img, "v1")
	p, err := layout.FromPath(lay)
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := p.ImageIndex()
	im, _ := idx.IndexManifest()
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations[RefNameAnnotation] != "v1" {
		t.Errorf("layout index: %+v", im.Manifests)
	}

	arch := filepath.Join(dir, "oci.tar")
	WriteOCIArchive(t, arch, img, "v1")
	out, err := exec.Command("tar", "-tf", arch).Output()
	if err != nil || !strings.Contains(string(out), "index.json") || !strings.Contains(string(out), "oci-layout") {
		t.Errorf("oci-archive listing: %s %v", out, err)
	}
}

func TestHostileLayersPush(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "victim")
	PrepareVictim(t, victim)
	reg := StartRegistry(t)
	for _, hc := range HostileLayers(t, victim) {
		reg.Push(t, "hostile/"+hc.Name+":1", Image(t, ImageConfig{}, hc.Layer))
	}
	CheckVictim(t, victim)
}

func TestFindLeaks(t *testing.T) {
	data := t.TempDir()
	if got := FindLeaks(data, nil); len(got) != 0 {
		t.Fatalf("leaks in an empty dir: %v", got)
	}
	// A mount under the data dir.
	mnt := filepath.Join(data, "m")
	os.Mkdir(mnt, 0o755)
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, ""); err != nil {
		t.Skipf("cannot mount tmpfs: %v", err)
	}
	// A process whose cwd is under it.
	cmd := exec.Command("sleep", "60")
	cmd.Dir = mnt
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// An IP reservation and libcontainer state.
	os.MkdirAll(filepath.Join(data, "networks", "default"), 0o755)
	os.WriteFile(filepath.Join(data, "networks", "default", "10.1.2.3"), []byte("x"), 0o644)
	os.MkdirAll(filepath.Join(data, "pods", "exited-garbage", "p", "runc", "app"), 0o755)

	kinds := map[string]int{}
	leaks := FindLeaks(data, []string{"00000000-0000-0000-0000-000000000000"})
	for _, l := range leaks {
		kinds[l.Kind]++
	}
	for _, k := range []string{"mount", "process", "ip", "runc"} {
		if kinds[k] == 0 {
			t.Errorf("no %s leak found in %v", k, leaks)
		}
	}
	cleanLeaks(leaks)
	cmd.Wait()
	os.RemoveAll(filepath.Join(data, "networks"))
	os.RemoveAll(filepath.Join(data, "pods"))
	if got := FindLeaks(data, nil); len(got) != 0 {
		t.Errorf("leaks after cleanLeaks: %v", got)
	}
}

func TestAptMirror(t *testing.T) {
	for _, tc := range []struct {
		name, file, content, want string
	}{
		{"one-line", "sources.list", "# deb http://old/ bookworm main\ndeb-src http://src/ bookworm main\n" +
			"deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main\n", "http://mirror.example/debian"},
		{"deb822", "sources.list.d/debian.sources", "Types: deb\nURIs: http://sec.example/debian-security\n" +
			"Suites: bookworm-security\nComponents: main\n\nTypes: deb deb-src\n# a comment\nURIs: http://deb.example/debian\n" +
			"Suites: bookworm bookworm-updates\nComponents: main\n", "http://deb.example/debian"},
		{"other suite only", "sources.list", "deb http://x/ trixie main\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, tc.file)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := aptMirror(dir, "bookworm")
			if got != tc.want || (err != nil) != (tc.want == "") {
				t.Errorf("aptMirror = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
