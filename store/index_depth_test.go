package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// nestedIndex returns an image index holding img, for this host, depth
// indexes deep: each index lists an image for another platform, then the
// next index (without a platform: it holds several).
func nestedIndex(t *testing.T, img v1.Image, depth int) v1.ImageIndex {
	t.Helper()
	host := platform(FetchOptions{})
	otherArch := "s390x"
	if host.Architecture == otherArch {
		otherArch = "ppc64le"
	}
	other := testImage(t, "ARCH=other", []entry{{name: "arch", body: "other"}})
	var idx v1.ImageIndex
	for i := 0; i < depth; i++ {
		next := mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &host}}
		if idx != nil {
			next = mutate.IndexAddendum{Add: idx}
		}
		idx = mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
			mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: otherArch}}},
			next)
	}
	return idx
}

// ociArchiveOf writes idx as the only entry of an oci-archive (0600).
func ociArchiveOf(t *testing.T, idx v1.ImageIndex) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(idx); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "nested.tar")
	tarDir(t, dir, archive)
	if err := os.Chmod(archive, 0o600); err != nil {
		t.Fatal(err)
	}
	return archive
}

// TestPullNestedIndex: an index of indexes, two deep, still resolves to
// this platform's image, from a registry and from an oci-archive.
func TestPullNestedIndex(t *testing.T) {
	mine := testImage(t, "ARCH=mine", []entry{{name: "arch", body: "mine"}})
	idx := nestedIndex(t, mine, 2)
	reg := startRegistry(t)
	ref := reg.host + "/nested/app:1"
	pushIndex(t, ref, idx)
	for _, ref := range []string{ref, "oci-archive:" + ociArchiveOf(t, idx)} {
		got, err := newStore(t).Pull(context.Background(), ref, PullOptions{})
		if err != nil {
			t.Errorf("pull of %s: %v", ref, err)
			continue
		}
		if got.ID != mustDigest(t, mine.ConfigName) {
			t.Errorf("pull of %s: got image %s, want this platform's %s", ref, got.ID, mustDigest(t, mine.ConfigName))
		}
	}
}

// TestPullIndexChainRefused: a chain of image indexes, each the only child
// of the one before, ending at a real image, is refused once it is deeper
// than an image may be: a registry's after a few manifest requests (not
// one per index), also when each index lists the next one a second time
// as an image for this platform, and an archive's; each with an error
// naming the image; nothing is stored.
func TestPullIndexChainRefused(t *testing.T) {
	for _, alsoImage := range []bool{false, true} {
		name := "registry"
		if alsoImage {
			name = "registry, next index also listed as an image"
		}
		t.Run(name, func(t *testing.T) {
			reg := startRegistry(t)
			img := testImage(t, "A=1", []entry{{name: "a", body: "a"}})
			reg.push(t, "chain/app:base", img)
			host := platform(FetchOptions{})
			otherArch := "s390x"
			if host.Architecture == otherArch {
				otherArch = "ppc64le"
			}
			mt, _ := img.MediaType()
			size, _ := img.Size()
			digest, _ := v1.NewHash(mustDigest(t, img.Digest))
			children := []v1.Descriptor{{MediaType: mt, Size: size, Digest: digest, Platform: &host}}
			chain := map[string][]byte{} // built from its end
			for i := 0; i < 1000; i++ {
				raw, err := json.Marshal(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: children})
				if err != nil {
					t.Fatal(err)
				}
				h, n, _ := v1.SHA256(bytes.NewReader(raw))
				chain[h.String()] = raw
				children = []v1.Descriptor{{MediaType: types.OCIImageIndex, Size: n, Digest: h, Platform: &host}}
				if alsoImage {
					children = []v1.Descriptor{
						{MediaType: types.OCIImageIndex, Size: n, Digest: h, Platform: &v1.Platform{OS: "linux", Architecture: otherArch}},
						{MediaType: types.OCIManifestSchema1, Size: n, Digest: h, Platform: &host},
					}
				}
			}
			top := children[0].Digest.String()
			var requests atomic.Int64
			setHook(reg, func(w http.ResponseWriter, req *http.Request) bool {
				_, ref, ok := strings.Cut(req.URL.Path, "/chain/app/manifests/")
				if !ok {
					return false
				}
				if ref == "1" {
					ref = top
				}
				raw, ok := chain[ref]
				if !ok {
					return false
				}
				requests.Add(1)
				w.Header().Set("Content-Type", string(types.OCIImageIndex))
				w.Header().Set("Docker-Content-Digest", ref)
				w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
				if req.Method != http.MethodHead {
					w.Write(raw)
				}
				return true
			})
			s := newStore(t)
			ref := reg.host + "/chain/app:1"
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			start := time.Now()
			_, err := s.Pull(ctx, ref, PullOptions{})
			if err == nil {
				t.Fatalf("pull of a chain of %d indexes succeeded after %d manifest requests", len(chain), requests.Load())
			}
			t.Logf("refused in %v after %d manifest requests: %v", time.Since(start).Round(time.Millisecond), requests.Load(), err)
			if !errors.Is(err, ErrIndexTooDeep) {
				t.Errorf("error does not wrap ErrIndexTooDeep: %v", err)
			}
			if n := requests.Load(); n > 8 {
				t.Errorf("%d manifest requests before the refusal", n)
			}
			for _, want := range []string{"chain/app:1", "nested too deep"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q: %v", want, err)
				}
			}
			assertNothingStored(t, s)
		})
	}
	t.Run("oci-archive", func(t *testing.T) {
		archive := ociArchiveOf(t, nestedIndex(t, testImage(t, "A=1", []entry{{name: "a", body: "a"}}), 12))
		s := newStore(t)
		_, err := s.Pull(context.Background(), "oci-archive:"+archive, PullOptions{})
		if err == nil {
			t.Fatal("pull of a chain of 12 indexes succeeded")
		}
		t.Logf("refused: %v", err)
		for _, want := range []string{archive, "nested too deep"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error does not say %q: %v", want, err)
			}
		}
		assertNothingStored(t, s)
	})
}

// TestResolveIndexDepthLimit: an image maxIndexDepth indexes deep is
// found; one index deeper is refused (ErrIndexTooDeep); an index without
// an image for the platform, nested or not, says so (ErrImageNotFound).
func TestResolveIndexDepthLimit(t *testing.T) {
	mine := testImage(t, "ARCH=mine", []entry{{name: "arch", body: "mine"}})
	host := platform(FetchOptions{})
	for depth := 1; depth <= maxIndexDepth+1; depth++ {
		img, err := resolveIndex(nestedIndex(t, mine, depth), host)
		switch {
		case depth > maxIndexDepth:
			if !errors.Is(err, ErrIndexTooDeep) {
				t.Errorf("depth %d: %v, want ErrIndexTooDeep", depth, err)
			}
		case err != nil:
			t.Errorf("depth %d: %v", depth, err)
		case mustDigest(t, img.ConfigName) != mustDigest(t, mine.ConfigName):
			t.Errorf("depth %d: got another platform's image", depth)
		}
	}
	for depth := 1; depth <= 2; depth++ {
		_, err := resolveIndex(nestedIndex(t, mine, depth), v1.Platform{OS: "linux", Architecture: "riscv64"})
		var np *NoPlatformError
		if !errors.As(err, &np) || !errors.Is(err, ErrImageNotFound) {
			t.Errorf("depth %d, no image for the platform: %v", depth, err)
		}
	}
}
