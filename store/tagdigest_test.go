package store

import (
	"context"
	"testing"
)

// A "name:tag@digest" reference names the digest's content; the tag is
// ignored (containerd's ParseDockerRef drops it, Docker warns that it is
// ignored): the registry was never asked what the tag points at, so
// recording it would make name:tag resolve to whatever digest a pod spec
// paired it with, and take the tag away from the image the registry gave.
func TestPullTagAndDigestKeepsTag(t *testing.T) {
	reg := startRegistry(t)
	s := newStore(t)
	ctx := context.Background()
	v1img := testImage(t, "V=1", []entry{{name: "v", body: "1"}})
	v2img := testImage(t, "V=2", []entry{{name: "v", body: "2"}})
	ref := reg.push(t, "test/app:v1", v1img)
	reg.push(t, "test/app:v2", v2img)
	first, err := s.Pull(ctx, ref, PullOptions{FetchOptions: FetchOptions{PullPolicy: PullUpdate}})
	if err != nil {
		t.Fatal(err)
	}
	// v2's digest, written with the v1 tag
	pinned := ref + "@" + mustDigest(t, v2img.Digest)
	second, err := s.Pull(ctx, pinned, PullOptions{FetchOptions: FetchOptions{PullPolicy: PullUpdate}})
	if err != nil {
		t.Fatal(err)
	}
	if second.ID != mustDigest(t, v2img.ConfigName) {
		t.Fatalf("pulled %s, want v2", second.ID)
	}
	for _, n := range second.Names {
		if n == ref {
			t.Errorf("the image pulled by %s got the tag %s", pinned, ref)
		}
	}
	got, err := s.ResolveImage(ref)
	if err != nil {
		t.Fatalf("%s no longer resolves: %v", ref, err)
	}
	if got.ID != first.ID {
		t.Errorf("%s resolves to %s (the digest pulled with it), want %s (what the registry's tag is)", ref, got.ID, first.ID)
	}
}
