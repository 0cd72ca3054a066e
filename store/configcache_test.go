package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// TestRemovedImagesLeaveNoConfigs: the store caches each image's parsed
// config by image ID (configs are immutable); a removed image's goes with
// it. The kubelet-service opens its store once: it would otherwise keep the
// config (up to 4 MiB of JSON, parsed) of every image it ever pulled,
// refused or removed, and a pod spec names any image it likes.
func TestRemovedImagesLeaveNoConfigs(t *testing.T) {
	reg := startRegistry(t)
	s := newStore(t)
	ctx := context.Background()
	const images = 4
	big := "PAD=" + strings.Repeat("x", 1<<20)
	for i := 0; i < images; i++ {
		img := testImage(t, fmt.Sprintf("IMG=%d", i), []entry{{name: "f", body: "x"}})
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cfg = cfg.DeepCopy()
		cfg.Config.Env = append(cfg.Config.Env, big)
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			t.Fatal(err)
		}
		ref := reg.push(t, fmt.Sprintf("cache/i%d:1", i), img)
		got, err := s.Fetch(ctx, ref, FetchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ResolveImage(got.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RemoveImage(got.ID, RemoveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A pull refused at unpacking (a whiteout of ".." passes the fetch's
	// check, not the extraction) records the image, then removes it: its
	// config stays too.
	img := testImage(t, "IMG=refused", []entry{{name: ".wh..", body: ""}})
	ref := reg.push(t, "cache/refused:1", img)
	if _, err := s.Pull(ctx, ref, PullOptions{}); err == nil {
		t.Fatal("pull of an image whose layer has a whiteout of \"..\" succeeded")
	}
	if _, err := s.GC(ctx, time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	imgs, err := s.ListImages()
	if err != nil || len(imgs) != 0 {
		t.Fatalf("images left: %d (err %v)", len(imgs), err)
	}
	n := 0
	s.configs.Range(func(k, v any) bool { n++; return true })
	if n != 0 {
		t.Errorf("the store holds %d parsed configs (over %d MiB) of images it no longer has", n, n*len(big)>>20)
	}
}
