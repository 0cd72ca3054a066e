package tests

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/rkt/rkt/tests/testutil"
)

// TestFetchRegistryTagAndDigest fetches by tag and by digest from a
// loopback registry: the ID is the config digest, the name and repo digest
// are recorded, and a digest that does not exist is refused.
func TestFetchRegistryTagAndDigest(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	img := testutil.BusyboxWith(t, testutil.ImageConfig{Labels: map[string]string{"t": "tag"}},
		testutil.Layer(t, testutil.File("etc/marker", "tag")))
	want := testutil.ImageID(t, img)
	ref := reg.Push(t, "lib/busybox:1.0", img)

	if got := env.Fetch(ref); got != want {
		t.Fatalf("fetch by tag printed %s, want %s", got, want)
	}
	info := env.FindImage(want)
	if info == nil {
		t.Fatalf("image %s not listed", want)
	}
	if !slices.Contains(info.Names, reg.Addr+"/lib/busybox:1.0") {
		t.Errorf("names %v lack %s/lib/busybox:1.0", info.Names, reg.Addr)
	}
	digest := testutil.ManifestDigest(t, img)
	if !slices.Contains(info.RepoDigests, reg.Addr+"/lib/busybox@"+digest) {
		t.Errorf("repo digests %v lack %s", info.RepoDigests, digest)
	}

	// By digest, into a fresh store.
	env2 := testutil.NewEnv(t)
	if got := env2.Fetch("docker://" + reg.Ref("lib/busybox@"+digest)); got != want {
		t.Fatalf("fetch by digest printed %s, want %s", got, want)
	}
	// The image resolves by digest reference and by ID prefix afterwards.
	env2.RunOK("image", "cat-manifest", reg.Ref("lib/busybox@"+digest))
	env2.RunOK("image", "cat-manifest", strings.TrimPrefix(want, "sha256:")[:12])

	// A digest the registry does not have.
	bad := "sha256:" + strings.Repeat("ab", 32)
	r := env2.RunFail("fetch", "--no-progress", reg.Ref("lib/busybox@"+bad))
	if !strings.Contains(r.Stderr, "lib/busybox") {
		t.Errorf("error does not name the image: %s", r.Stderr)
	}
	// A tag that does not exist.
	env2.RunFail("fetch", "--no-progress", reg.Ref("lib/busybox:nope"))
	if n := len(env2.ListImages()); n != 1 {
		t.Errorf("failed fetches changed the store: %d images", n)
	}
}

// TestFetchRegistryIndex fetches a multi-platform index and gets this
// host's image; the repo digest is the index digest.
func TestFetchRegistryIndex(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	host := testutil.BusyboxWith(t, testutil.ImageConfig{Labels: map[string]string{"arch": runtime.GOARCH}})
	foreign := testutil.BusyboxWith(t, testutil.ImageConfig{Architecture: other, Labels: map[string]string{"arch": other}})
	idx := testutil.Index(t,
		testutil.PlatformImage{OS: "linux", Architecture: other, Image: foreign},
		testutil.PlatformImage{OS: "linux", Architecture: runtime.GOARCH, Image: host},
	)
	ref := reg.PushIndex(t, "multi:1", idx)
	want := testutil.ImageID(t, host)
	if got := env.Fetch(ref); got != want {
		t.Fatalf("fetch of index printed %s, want this host's image %s (foreign %s)", got, want, testutil.ImageID(t, foreign))
	}
	info := env.FindImage(want)
	idxDigest := testutil.ManifestDigest(t, idx)
	if info == nil || !slices.Contains(info.RepoDigests, reg.Addr+"/multi@"+idxDigest) {
		t.Errorf("repo digests should hold the index digest %s: %+v", idxDigest, info)
	}
	if info != nil && info.ManifestDigest != testutil.ManifestDigest(t, host) {
		t.Errorf("manifest digest %s, want %s", info.ManifestDigest, testutil.ManifestDigest(t, host))
	}
	// Fetching the index by its digest gives the same image.
	env2 := testutil.NewEnv(t)
	if got := env2.Fetch(reg.Ref("multi@" + idxDigest)); got != want {
		t.Errorf("fetch of index by digest printed %s, want %s", got, want)
	}
}

// TestFetchMultipleAndNames fetches several images in one command and
// checks bare-name normalization of the table output.
func TestFetchMultipleAndNames(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	a := testutil.BusyboxWith(t, testutil.ImageConfig{}, testutil.Layer(t, testutil.File("a", "a")))
	b := testutil.BusyboxWith(t, testutil.ImageConfig{}, testutil.Layer(t, testutil.File("b", "b")))
	refA, refB := reg.Push(t, "a", a), reg.Push(t, "b:2", b)
	r := env.RunOK("fetch", "--no-progress", refA, refB)
	ids := strings.Fields(r.Stdout)
	if len(ids) != 2 || ids[0] != testutil.ImageID(t, a) || ids[1] != testutil.ImageID(t, b) {
		t.Fatalf("fetch of two images printed %q", r.Stdout)
	}
	if strings.Contains(r.Stderr, "\x1b[") {
		t.Errorf("progress drawn although stderr is not a terminal: %q", r.Stderr)
	}
	out := env.RunOK("image", "list").Stdout
	for _, want := range []string{"ID", "NAME", "SIZE", "IMPORT TIME", "LAST USED", reg.Addr + "/a:latest", reg.Addr + "/b:2"} {
		if !strings.Contains(out, want) {
			t.Errorf("image list lacks %q:\n%s", want, out)
		}
	}
	// One good and one bad reference: the good one is fetched, rkt fails.
	env2 := testutil.NewEnv(t)
	r = env2.RunFail("fetch", "--no-progress", refA, reg.Ref("missing:1"))
	if strings.TrimSpace(r.Stdout) != testutil.ImageID(t, a) || !strings.Contains(r.Stderr, "missing") {
		t.Errorf("partial fetch: %s", r)
	}
}

// TestFetchDigestVerified serves a layer and, separately, a config with one
// byte flipped: the fetch is refused and the store keeps nothing.
func TestFetchDigestVerified(t *testing.T) {
	for _, which := range []string{"layer", "config"} {
		t.Run(which, func(t *testing.T) {
			env := testutil.NewEnv(t)
			reg := testutil.StartRegistry(t)
			img := testutil.Busybox(t)
			ref := reg.Push(t, "tampered:1", img)
			digest := testutil.ImageID(t, img)
			if which == "layer" {
				layers, _ := img.Layers()
				d, _ := layers[0].Digest()
				digest = d.String()
			}
			reg.CorruptBlob(digest)
			r := env.RunFail("fetch", "--no-progress", ref)
			if !strings.Contains(r.Stderr, "digest") && !strings.Contains(r.Stderr, "sha256") {
				t.Errorf("error does not mention the digest: %s", r.Stderr)
			}
			assertStoreEmpty(t, env, "tampered "+which, digest)
		})
	}
}

// TestFetchDockerMediaTypes fetches a Docker schema 2 image and a Docker
// manifest list, as most registries serve them.
func TestFetchDockerMediaTypes(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	img := testutil.Image(t, testutil.ImageConfig{Docker: true, Cmd: []string{"sh"}},
		testutil.DockerLayer(t, testutil.BusyboxEntries(t)...),
		testutil.DockerLayer(t, testutil.File("etc/docker", "yes")))
	if mt, _ := img.MediaType(); !strings.Contains(string(mt), "docker") {
		t.Fatalf("built media type %s", mt)
	}
	id := testutil.ImageID(t, img)
	if got := env.Fetch(reg.Push(t, "docker/img:1", img)); got != id {
		t.Fatalf("fetch printed %s, want %s", got, id)
	}
	env.RunOK("image", "render", id, env.Root+"/r")
	assertFile(t, env.Root+"/r/etc/docker", "yes")
	if raw := env.RunOK("image", "cat-manifest", id).Stdout; !strings.Contains(raw, "application/vnd.docker.distribution.manifest.v2+json") {
		t.Errorf("stored manifest is not the Docker one served:\n%s", raw)
	}

	other := testutil.Image(t, testutil.ImageConfig{Docker: true, Architecture: "s390x"}, testutil.DockerLayer(t, testutil.File("x", "x")))
	list := testutil.DockerIndex(t,
		testutil.PlatformImage{OS: "linux", Architecture: "s390x", Image: other},
		testutil.PlatformImage{OS: "linux", Architecture: runtime.GOARCH, Image: img})
	env2 := testutil.NewEnv(t)
	if got := env2.Fetch(reg.PushIndex(t, "docker/list:1", list)); got != id {
		t.Errorf("fetch of a manifest list printed %s, want %s", got, id)
	}
}
