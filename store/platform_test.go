package store

import (
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestChildFor: of an index's children, the first whose platform
// satisfies the wanted one is taken, before any child without a platform
// (an image its author did not label, or an index of several platforms);
// such a child is taken for any platform when no labelled one fits, as
// containerd does, so an archive's unlabelled image is found on arm64 too.
func TestChildFor(t *testing.T) {
	riscv := v1.Platform{OS: "linux", Architecture: "riscv64"}
	s390x := v1.Platform{OS: "linux", Architecture: "s390x"}
	child := func(name string, mt types.MediaType, p *v1.Platform) v1.Descriptor {
		return v1.Descriptor{MediaType: mt, Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat(name, 64)}, Platform: p}
	}
	unlabelled := child("a", types.OCIManifestSchema1, nil)
	mine := child("b", types.OCIManifestSchema1, &riscv)
	other := child("c", types.OCIManifestSchema1, &s390x)
	nested := child("d", types.OCIImageIndex, nil)
	for _, c := range []struct {
		name     string
		children []v1.Descriptor
		want     *v1.Descriptor
	}{
		{"labelled before unlabelled", []v1.Descriptor{unlabelled, mine}, &mine},
		{"labelled before an unlabelled index", []v1.Descriptor{nested, other, mine}, &mine},
		{"unlabelled image, any platform", []v1.Descriptor{other, unlabelled}, &unlabelled},
		{"unlabelled index", []v1.Descriptor{other, nested}, &nested},
		{"none for the platform", []v1.Descriptor{other}, nil},
	} {
		got, ok := childFor(&v1.IndexManifest{Manifests: c.children}, riscv)
		switch {
		case c.want == nil && ok:
			t.Errorf("%s: took %s", c.name, got.Digest)
		case c.want != nil && (!ok || got.Digest != c.want.Digest):
			t.Errorf("%s: took %s (%v), want %s", c.name, got.Digest, ok, c.want.Digest)
		}
	}
}
