package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestFetchFromRegistry(t *testing.T) {
	reg := startRegistry(t)
	img := testImage(t, "A=1",
		[]entry{{name: "bin/", typ: '5'}, {name: "bin/hello", body: "hi", mode: 0o755}},
		[]entry{{name: "etc/motd", body: "welcome"}})
	ref := reg.push(t, "test/hello:1", img)
	s := newStore(t)
	ctx := context.Background()

	var progressed int
	got, err := s.Fetch(ctx, ref, FetchOptions{Progress: func(p Progress) {
		if p.Done {
			progressed++
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	wantID := mustDigest(t, img.ConfigName)
	wantManifest := mustDigest(t, img.Digest)
	if got.ID != wantID {
		t.Errorf("ID = %s, want config digest %s", got.ID, wantID)
	}
	if len(got.Names) != 1 || got.Names[0] != ref {
		t.Errorf("Names = %v, want [%s]", got.Names, ref)
	}
	if len(got.RepoDigests) != 1 || got.RepoDigests[0] != reg.host+"/test/hello@"+wantManifest {
		t.Errorf("RepoDigests = %v", got.RepoDigests)
	}
	if got.Config == nil || got.Config.Config.Env[0] != "A=1" {
		t.Errorf("Config = %+v", got.Config)
	}
	if len(got.Layers) != 2 || progressed != 2 {
		t.Errorf("layers = %d, progress done callbacks = %d", len(got.Layers), progressed)
	}

	for _, r := range []string{got.ID, strings.TrimPrefix(got.ID, "sha256:")[:10], "sha256:" + strings.TrimPrefix(got.ID, "sha256:")[:8], ref, reg.host + "/test/hello@" + wantManifest} {
		res, err := s.ResolveImage(r)
		if err != nil || res.ID != got.ID {
			t.Errorf("ResolveImage(%q) = %v, %v", r, res, err)
		}
	}
	if _, err := s.ResolveImage(reg.host + "/test/hello:2"); !errors.Is(err, ErrImageNotFound) {
		t.Errorf("ResolveImage(missing) err = %v, want ErrImageNotFound", err)
	}

	paths, err := s.LayerPaths(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(paths[0], "bin/hello")); err != nil || string(b) != "hi" {
		t.Errorf("layer 0 bin/hello = %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(paths[1], "etc/motd")); err != nil || string(b) != "welcome" {
		t.Errorf("layer 1 etc/motd = %q, %v", b, err)
	}

	// Pull policy new: no registry traffic for an image in the store.
	before := reg.requests.Load()
	if _, err := s.Fetch(ctx, ref, FetchOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := reg.requests.Load() - before; n != 0 {
		t.Errorf("second fetch made %d registry requests, want 0", n)
	}
	imgs, err := s.ListImages()
	if err != nil || len(imgs) != 1 {
		t.Fatalf("ListImages = %d images, %v", len(imgs), err)
	}
	// By ID or ID prefix: from the store, whatever the pull policy.
	before = reg.requests.Load()
	for _, r := range []string{got.ID, got.ShortID()} {
		for _, p := range []PullPolicy{PullNever, PullNew, PullUpdate} {
			if byID, err := s.Fetch(ctx, r, FetchOptions{PullPolicy: p}); err != nil || byID.ID != got.ID {
				t.Errorf("Fetch(%s, %s) = %v, %v", r, p, byID, err)
			}
		}
	}
	if n := reg.requests.Load() - before; n != 0 {
		t.Errorf("fetch by ID made %d registry requests", n)
	}
	// By repo digest: immutable, so even "update" needs no registry.
	if byDigest, err := s.Fetch(ctx, got.RepoDigests[0], FetchOptions{PullPolicy: PullUpdate}); err != nil || byDigest.ID != got.ID {
		t.Errorf("Fetch(%s, update) = %v, %v", got.RepoDigests[0], byDigest, err)
	}
	if n := reg.requests.Load() - before; n != 0 {
		t.Errorf("fetch by repo digest made %d registry requests", n)
	}
	if _, err := s.Fetch(ctx, "sha256:"+strings.Repeat("0", 64), FetchOptions{}); !errors.Is(err, ErrImageNotFound) {
		t.Errorf("fetch of an unknown ID: %v", err)
	}
}

func TestPullPolicies(t *testing.T) {
	reg := startRegistry(t)
	s := newStore(t)
	ctx := context.Background()
	ref := reg.host + "/test/app:latest"

	if _, err := s.Fetch(ctx, ref, FetchOptions{PullPolicy: PullNever}); !errors.Is(err, ErrImageNotFound) {
		t.Fatalf("never on empty store: err = %v, want ErrImageNotFound", err)
	}
	v1img := testImage(t, "V=1", []entry{{name: "v", body: "1"}})
	reg.push(t, "test/app:latest", v1img)
	first, err := s.Fetch(ctx, ref, FetchOptions{PullPolicy: PullNever})
	if err == nil {
		t.Fatalf("never fetched %s from the registry", first.ID)
	}
	first, err = s.Fetch(ctx, ref, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v2img := testImage(t, "V=2", []entry{{name: "v", body: "2"}})
	reg.push(t, "test/app:latest", v2img)

	for _, tc := range []struct {
		policy PullPolicy
		wantID string
	}{
		{PullNever, first.ID},
		{PullNew, first.ID},
		{PullUpdate, mustDigest(t, v2img.ConfigName)},
	} {
		got, err := s.Fetch(ctx, ref, FetchOptions{PullPolicy: tc.policy})
		if err != nil {
			t.Fatalf("%s: %v", tc.policy, err)
		}
		if got.ID != tc.wantID {
			t.Errorf("%s: got %s, want %s", tc.policy, got.ID, tc.wantID)
		}
	}
	// The tag moved: the old image keeps only its repo digest.
	old, err := s.ResolveImage(first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(old.Names) != 0 || len(old.RepoDigests) != 1 {
		t.Errorf("old image names %v digests %v", old.Names, old.RepoDigests)
	}
	// update again: same digest, no blob downloads, same image.
	again, err := s.Fetch(ctx, ref, FetchOptions{PullPolicy: PullUpdate})
	if err != nil || again.ID != mustDigest(t, v2img.ConfigName) {
		t.Fatalf("update again: %v, %v", again, err)
	}
	if _, err := ParsePullPolicy("sometimes"); err == nil {
		t.Error("ParsePullPolicy accepted an invalid policy")
	}
}

func TestFetchRepairsMissingBlobs(t *testing.T) {
	reg := startRegistry(t)
	ref := reg.push(t, "heal/img:1", testImage(t, "H=1", []entry{{name: "h", body: "heal"}}))
	s := newStore(t)
	ctx := context.Background()
	img, err := s.Fetch(ctx, ref, FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(s.blobPath(strings.TrimPrefix(img.Layers[0].Digest, "sha256:"))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fetch(ctx, ref, FetchOptions{PullPolicy: PullNever}); err != nil {
		t.Errorf("pull policy never on an incomplete image: %v", err)
	}
	before := reg.requests.Load()
	if _, err := s.Fetch(ctx, ref, FetchOptions{}); err != nil {
		t.Fatal(err)
	}
	if reg.requests.Load() == before || !s.hasBlob(img.Layers[0].Digest) {
		t.Error("fetch did not restore the missing layer blob")
	}
	if _, err := s.LayerPaths(ctx, img); err != nil {
		t.Error(err)
	}
}

func TestConcurrentFetchInProcess(t *testing.T) {
	reg := startRegistry(t)
	ref := reg.push(t, "par/img:1", testImage(t, "P=1",
		[]entry{{name: "a", body: strings.Repeat("a", 1<<20)}},
		[]entry{{name: "b", body: strings.Repeat("b", 1<<20)}}))
	s := newStore(t)
	ctx := context.Background()
	var blobGets atomic.Int64
	hook := func(d string, b []byte) []byte { blobGets.Add(1); return b }
	reg.blobHook.Store(&hook)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			img, err := s.Fetch(ctx, ref, FetchOptions{})
			if err == nil {
				_, err = s.LayerPaths(ctx, img)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("fetch %d: %v", i, err)
		}
	}
	// 2 layers and a config; each downloaded once at most per fetch that
	// found it missing, and the layers only once thanks to the key locks.
	if n := blobGets.Load(); n > 2+4 {
		t.Errorf("%d blob downloads for 2 layers and a config", n)
	}
	if n := countDir(t, s.tmpPath()); n != 0 {
		t.Errorf("%d temporary entries left", n)
	}
}
