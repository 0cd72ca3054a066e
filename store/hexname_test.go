package store

import (
	"context"
	"strings"
	"testing"

	"github.com/rkt/rkt/store/regconfig"
)

// An image name that happens to be hex ("docker.io/library/<hex>") names
// that image, as in containerd (the name is looked up first, an ID prefix
// only if no name matches) and Docker: a pull of it, as PullImage makes
// one, goes to the registry rather than answering with a stored image
// whose ID starts with those characters, and ImageStatus of it is it.
func TestHexNameIsAName(t *testing.T) {
	mirror := startRegistry(t)
	cfg := &regconfig.Config{Mirrors: map[string][]regconfig.Mirror{
		"docker.io": {{Endpoint: mirror.host, Insecure: true}},
	}}
	s := newStore(t)
	ctx := context.Background()
	opts := PullOptions{FetchOptions: FetchOptions{PullPolicy: PullUpdate, Registries: cfg, RegistryOnly: true}}
	mirror.push(t, "library/other:1", testImage(t, "A=1", []entry{{name: "a", body: "a"}}))
	a, err := s.Pull(ctx, "other:1", opts)
	if err != nil {
		t.Fatal(err)
	}
	hexName := strings.TrimPrefix(a.ID, "sha256:")[:6]
	b := testImage(t, "B=1", []entry{{name: "b", body: "b"}})
	mirror.push(t, "library/"+hexName+":latest", b)
	wantB := mustDigest(t, b.ConfigName)
	got, err := s.Pull(ctx, hexName, opts)
	if err != nil {
		t.Fatalf("pull of %s: %v", hexName, err)
	}
	if got.ID != wantB {
		t.Errorf("pull of docker.io/library/%s answered %s (the stored image with that ID prefix), want %s", hexName, got.ID, wantB)
	}
	if r, err := s.ResolveImage(hexName); err != nil || r.ID != wantB {
		t.Errorf("ResolveImage(%s) = %v, %v; want the image of that name, %s", hexName, r, err, wantB)
	}
}
