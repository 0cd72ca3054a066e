package tests

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rkt/rkt/tests/testutil"
)

// assertStoreEmpty fails unless the store holds no image, tree or
// temporary file, and no blob once unreferenced blobs are collected.
// refused, if not empty, is the digest of the refused blob: it must not be
// stored even before collection. (Valid blobs of an image whose other
// layer was refused may stay until `rkt image gc`: they are complete,
// verified and referenced by nothing.)
func assertStoreEmpty(t *testing.T, env *testutil.Env, what, refused string) {
	t.Helper()
	if imgs := env.ListImages(); len(imgs) != 0 {
		t.Errorf("%s: %d images stored", what, len(imgs))
	}
	for _, sub := range []string{"tree", "tmp"} {
		if left := dirEntries(t, casDir(env.DataDir, sub)); len(left) != 0 {
			t.Errorf("%s: left in cas/%s: %v", what, sub, left)
		}
	}
	blobs := dirEntries(t, casDir(env.DataDir, "blobs", "sha256"))
	for _, b := range blobs {
		if "sha256:"+b == refused {
			t.Errorf("%s: the refused blob %s is stored", what, refused)
		}
	}
	if len(blobs) > 0 {
		t.Logf("%s: %d verified blobs of the refused image stored; collecting them", what, len(blobs))
		env.RunOK("image", "gc", "--grace-period=0s")
		if left := dirEntries(t, casDir(env.DataDir, "blobs", "sha256")); len(left) != 0 {
			t.Errorf("%s: blobs left after image gc: %v", what, left)
		}
	}
}

// TestFetchHostileLayers fetches every hostile layer from a registry (and
// the path attacks also from an oci-archive and a docker-archive): each is
// refused with a clear error, nothing lands outside the store, and nothing
// is left in it.
func TestFetchHostileLayers(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	victim := filepath.Join(env.Root, "victim")
	testutil.PrepareVictim(t, victim)
	archives := t.TempDir()
	viaArchive := map[string]bool{"dotdot": true, "symlink-escape": true, "hardlink-escape": true, "whiteout-via-symlink": true, "truncated-tar": true}

	for _, hc := range testutil.HostileLayers(t, victim) {
		t.Run(hc.Name, func(t *testing.T) {
			env := env.WithT(t)
			img := testutil.Image(t, testutil.ImageConfig{}, testutil.BusyboxLayer(t), hc.Layer)
			refs := []string{reg.Push(t, "hostile/"+hc.Name+":1", img)}
			if viaArchive[hc.Name] {
				oci := filepath.Join(archives, hc.Name+".oci.tar")
				testutil.WriteOCIArchive(t, oci, img, "1")
				docker := filepath.Join(archives, hc.Name+".docker.tar")
				testutil.WriteDockerArchive(t, docker, "example.com/hostile/"+hc.Name+":1", img)
				refs = append(refs, "oci-archive:"+oci, "docker-archive:"+docker)
			}
			for i, ref := range refs {
				r := env.Run("fetch", "--no-progress", ref)
				if r.Code == 0 {
					if hc.MustRefuse {
						t.Errorf("%s: corrupt layer accepted: %s", ref, r)
					}
					// Contained: the image renders, nothing escaped.
					id := strings.TrimSpace(r.Stdout)
					env.RunOK("image", "render", id, filepath.Join(env.Root, fmt.Sprintf("render-%s-%d", hc.Name, i)))
					testutil.CheckVictim(t, victim)
					t.Logf("%s contained (accepted inside the tree)", ref)
					env.RunOK("image", "rm", id)
					env.RunOK("image", "gc", "--grace-period=0s")
					continue
				}
				if strings.Contains(r.Stderr, "panic") || len(strings.TrimSpace(r.Stderr)) < 20 {
					t.Errorf("%s: unclear error: %s", ref, r.Stderr)
				}
				t.Logf("%s refused: %s", ref, strings.SplitN(strings.TrimSpace(r.Stderr), "\n", 2)[0])
				testutil.CheckVictim(t, victim)
				refused := ""
				if hc.MustRefuse {
					d, _ := hc.Layer.Digest()
					refused = d.String()
				}
				assertStoreEmpty(t, env, ref, refused)
			}
		})
	}

	// The store still works after all that.
	ref, id := testutil.PushBusybox(t, reg, "fine:1")
	if got := env.Fetch(ref); got != id {
		t.Errorf("fetch after hostile attempts printed %s, want %s", got, id)
	}
}
