package tests

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// layerSums maps every regular file of a layer to the sha256 of its content.
func layerSums(t *testing.T, l v1.Layer) map[string][32]byte {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	sums := map[string][32]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return sums
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			sums[h.Name] = sha256.Sum256(b)
		}
	}
}

// assertRendered renders id and compares its files with the layer's.
func assertRendered(t *testing.T, env *testutil.Env, id string, want map[string][32]byte) {
	t.Helper()
	dir := filepath.Join(env.Root, "render-check")
	os.RemoveAll(dir)
	env.RunOK("image", "render", id, dir)
	for name, sum := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("rendered image lacks %s: %v", name, err)
			continue
		}
		if sha256.Sum256(b) != sum {
			t.Errorf("rendered %s has the wrong content", name)
		}
	}
	os.RemoveAll(dir)
}

// TestFetchConcurrent runs two fetches of one image at once: both
// succeed, print the same ID, and the image is stored once.
func TestFetchConcurrent(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	data := testutil.RandomLayer(t, 7, "data", 8, 2<<20)
	img := testutil.BusyboxWith(t, testutil.ImageConfig{}, data)
	ref := reg.Push(t, "concurrent:1", img)
	reg.SetBlobRate(4 << 20) // ~1 s per fetch, so they overlap

	var wg sync.WaitGroup
	results := make([]testutil.Result, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = env.Run("fetch", "--no-progress", ref)
		}()
	}
	wg.Wait()
	id := testutil.ImageID(t, img)
	for i, r := range results {
		if r.Code != 0 || strings.TrimSpace(r.Stdout) != id {
			t.Errorf("fetch %d: %s", i, r)
		}
	}
	if imgs := env.ListImages(); len(imgs) != 1 {
		t.Errorf("store lists %d images, want 1", len(imgs))
	}
	if blobs := dirEntries(t, casDir(env.DataDir, "blobs", "sha256")); len(blobs) != 4 { // manifest, config, 2 layers
		t.Errorf("blobs: %v, want 4", blobs)
	}
	if trees := dirEntries(t, casDir(env.DataDir, "tree")); len(trees) != 2 {
		t.Errorf("trees: %v, want 2", trees)
	}
	if left := dirEntries(t, casDir(env.DataDir, "tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	assertRendered(t, env, id, layerSums(t, data))
}

// TestFetchKilled SIGKILLs rkt fetch at several points of a slow download
// (and of the unpacking that follows), then fetches again at full speed:
// the store stays consistent and the image comes out whole.
func TestFetchKilled(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	data := testutil.RandomLayer(t, 11, "data", 12, 3<<20)
	img := testutil.BusyboxWith(t, testutil.ImageConfig{}, data)
	id := testutil.ImageID(t, img)
	ref := reg.Push(t, "killed:1", img)

	reg.SetBlobRate(1 << 20) // ~3 s for the data layer
	for _, after := range []time.Duration{200 * time.Millisecond, time.Second, 2 * time.Second, 2900 * time.Millisecond} {
		cmd := env.Command(context.Background(), "fetch", "--no-progress", ref)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(after)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		t.Logf("killed after %s: %v %s", after, err, strings.TrimSpace(out.String()))

		// The store answers, and lists the image only if it was complete.
		for _, im := range env.ListImages() {
			if im.ID != id {
				t.Errorf("unexpected image %s after kill", im.ID)
			}
			assertRendered(t, env, id, layerSums(t, data))
		}
	}
	reg.SetBlobRate(0)
	if got := env.Fetch(ref); got != id {
		t.Fatalf("fetch after kills printed %s, want %s", got, id)
	}
	assertRendered(t, env, id, layerSums(t, data))
	// Temporary files of the killed fetches are invisible to readers and
	// are collected once stale (unlocked and older than a minute: age them).
	old := time.Now().Add(-time.Hour)
	for _, n := range dirEntries(t, casDir(env.DataDir, "tmp")) {
		os.Chtimes(casDir(env.DataDir, "tmp", n), old, old)
	}
	env.RunOK("image", "rm", id)
	env.RunOK("image", "gc", "--grace-period=0s")
	for _, sub := range []string{"blobs/sha256", "tree", "tmp"} {
		if left := dirEntries(t, casDir(env.DataDir, sub)); len(left) != 0 {
			t.Errorf("cas/%s not empty after rm and gc: %v", sub, left)
		}
	}
}

// TestFetchKilledWhileUnpacking SIGKILLs rkt fetch at several points while
// it unpacks a layer of many files from a fast registry; the next fetch
// completes the image and no partial tree is ever used.
func TestFetchKilledWhileUnpacking(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	entries := []testutil.Entry{testutil.Dir("many")}
	for i := 0; i < 4000; i++ {
		entries = append(entries, testutil.File(fmt.Sprintf("many/f%04d", i), fmt.Sprintf("content %d\n", i)))
	}
	many := testutil.Layer(t, entries...)
	img := testutil.BusyboxWith(t, testutil.ImageConfig{}, many)
	id := testutil.ImageID(t, img)
	ref := reg.Push(t, "many:1", img)

	for _, after := range []time.Duration{60 * time.Millisecond, 120 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond} {
		cmd := env.Command(context.Background(), "fetch", "--no-progress", ref)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(after)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		t.Logf("killed after %s: %v (image recorded: %v, trees: %d, temp: %d)", after, err, env.FindImage(id) != nil,
			len(dirEntries(t, casDir(env.DataDir, "tree"))), len(dirEntries(t, casDir(env.DataDir, "tmp"))))
		assertTreesComplete(t, env, 4000)
	}
	if got := env.Fetch(ref); got != id {
		t.Fatalf("fetch after kills printed %s, want %s", got, id)
	}
	assertRendered(t, env, id, layerSums(t, many))
	assertTreesComplete(t, env, 4000)
	if trees := dirEntries(t, casDir(env.DataDir, "tree")); len(trees) != 2 {
		t.Errorf("trees: %v, want 2", trees)
	}
}

// assertTreesComplete fails if a tree in place holds a partial many/ dir.
func assertTreesComplete(t *testing.T, env *testutil.Env, files int) {
	t.Helper()
	for _, tree := range dirEntries(t, casDir(env.DataDir, "tree")) {
		dir := casDir(env.DataDir, "tree", tree, "many")
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		if n := len(dirEntries(t, dir)); n != files {
			t.Errorf("tree %s is partial: %d of %d files", tree, n, files)
		}
	}
}

// TestFetchInterrupted sends SIGINT to a slow fetch: rkt stops promptly,
// fails, and removes its temporary files itself.
func TestFetchInterrupted(t *testing.T) {
	env := testutil.NewEnv(t)
	reg := testutil.StartRegistry(t)
	img := testutil.BusyboxWith(t, testutil.ImageConfig{}, testutil.RandomLayer(t, 5, "data", 2, 4<<20))
	ref := reg.Push(t, "interrupted:1", img)
	reg.SetBlobRate(512 << 10) // ~8 s for the data layer

	cmd := env.Command(context.Background(), "fetch", "--no-progress", ref)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if err == nil {
		t.Fatalf("interrupted fetch succeeded: %s", out.String())
	}
	if !strings.Contains(out.String(), "interrupted") {
		t.Errorf("rkt does not say the fetch was interrupted: %s", out.String())
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("rkt took %s to stop after SIGINT", d)
	}
	t.Logf("interrupted: %v: %s", err, strings.TrimSpace(out.String()))
	if imgs := env.ListImages(); len(imgs) != 0 {
		t.Errorf("interrupted fetch stored %d images", len(imgs))
	}
	if left := dirEntries(t, casDir(env.DataDir, "tmp")); len(left) != 0 {
		t.Errorf("interrupted fetch left temporary files: %v", left)
	}
}
