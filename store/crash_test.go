package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The test binary doubles as a helper process that uses the store, so tests
// can run several processes against one store and SIGKILL them.
func TestMain(m *testing.M) {
	if mode := os.Getenv("STORE_TEST_HELPER"); mode != "" {
		os.Exit(helperMain(mode, os.Getenv("STORE_TEST_DIR"), os.Getenv("STORE_TEST_REF")))
	}
	os.Exit(m.Run())
}

func helperMain(mode, dir, ref string) int {
	s, err := Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	img, err := s.Fetch(ctx, ref, FetchOptions{})
	if err == nil && mode == "unpack" {
		_, err = s.LayerPaths(ctx, img)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(img.ID)
	return 0
}

func helper(t *testing.T, mode, dir, ref string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "STORE_TEST_HELPER="+mode, "STORE_TEST_DIR="+dir, "STORE_TEST_REF="+ref)
	return cmd
}

// pseudoRandom returns n bytes of deterministic, poorly compressible data.
func pseudoRandom(seed int64, n int) string {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return string(b)
}

// checkConsistent verifies the store's invariants: every visible blob has
// the content its name says, every image's blobs are present.
func checkConsistent(t *testing.T, s *Store) {
	t.Helper()
	dir := filepath.Join(s.Dir(), blobsDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != e.Name() {
			t.Errorf("blob %s has the wrong content (half written?)", e.Name())
		}
	}
	imgs, err := s.ListImages()
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs {
		for _, d := range imageBlobs(img) {
			if !s.hasBlob(d) {
				t.Errorf("image %s lacks blob %s", img.ID, d)
			}
		}
	}
}

func TestConcurrentFetchProcesses(t *testing.T) {
	reg := startRegistry(t)
	img := testImage(t, "CC=1",
		[]entry{{name: "a", body: pseudoRandom(1, 2<<20)}},
		[]entry{{name: "b", body: pseudoRandom(2, 2<<20)}},
		[]entry{{name: "c", body: pseudoRandom(3, 2<<20)}})
	ref := reg.push(t, "cc/img:1", img)
	dir := t.TempDir()
	const n = 3
	outs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := helper(t, "unpack", dir, ref).CombinedOutput()
			outs[i], errs[i] = strings.TrimSpace(string(out)), err
		}()
	}
	wg.Wait()
	want := mustDigest(t, img.ConfigName)
	for i := range n {
		if errs[i] != nil || outs[i] != want {
			t.Errorf("process %d: %v: %s", i, errs[i], outs[i])
		}
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	imgs, err := s.ListImages()
	if err != nil || len(imgs) != 1 {
		t.Fatalf("%d images, %v; want 1", len(imgs), err)
	}
	if b := countDir(t, filepath.Join(s.Dir(), blobsDir)); b != 5 {
		t.Errorf("%d blobs, want 5 (3 layers, config, manifest)", b)
	}
	if tr := countDir(t, filepath.Join(s.Dir(), treeDir)); tr != 3 {
		t.Errorf("%d trees, want 3", tr)
	}
	if tmp := countDir(t, s.tmpPath()); tmp != 0 {
		t.Errorf("%d temporary entries left", tmp)
	}
	checkConsistent(t, s)
}

func diffIDsOf(t *testing.T, img v1.Image) []string {
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range cfg.RootFS.DiffIDs {
		out = append(out, d.String())
	}
	return out
}

// waitTemp waits until the store's tmp dir has an entry with prefix.
func waitTemp(t *testing.T, s *Store, prefix string, cmd *exec.Cmd) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir(s.tmpPath())
		for _, e := range entries {
			if fi, err := e.Info(); err == nil && strings.HasPrefix(e.Name(), prefix) && (fi.IsDir() || fi.Size() > 0) {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Kill()
	t.Fatalf("no %s* temporary entry appeared", prefix)
}

func TestSIGKILLMidFetchAndUnpack(t *testing.T) {
	reg := startRegistry(t)
	var files []entry
	for i := range 400 {
		files = append(files, entry{name: fmt.Sprintf("d%d/f%d", i%20, i), body: pseudoRandom(int64(i), 8<<10)})
	}
	img := testImage(t, "K=1", []entry{{name: "small", body: "s"}}, files)
	ref := reg.push(t, "kill/img:1", img)
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	for _, phase := range []struct{ mode, prefix string }{{"fetch", "blob-"}, {"unpack", "tree-"}} {
		t.Run(phase.mode, func(t *testing.T) {
			if phase.mode == "fetch" {
				reg.blobDelay.Store(int64(20 * time.Millisecond))
			}
			if phase.mode == "unpack" {
				// Blobs in place; the helper only unpacks.
				if _, err := s.Fetch(ctx, ref, FetchOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			cmd := helper(t, phase.mode, dir, ref)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitTemp(t, s, phase.prefix, cmd)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			reg.blobDelay.Store(0)

			checkConsistent(t, s)
			if phase.mode == "fetch" {
				if imgs, _ := s.ListImages(); len(imgs) != 0 {
					t.Errorf("killed fetch left a recorded image")
				}
			}
			// The big layer's tree is either absent or complete.
			bigTree, _ := s.TreePath(Layer{ChainID: chainIDs(diffIDsOf(t, img))[1]})
			if _, err := os.Stat(bigTree); err == nil {
				if n := countDir(t, filepath.Join(bigTree, "d7")); n != 20 {
					t.Errorf("killed unpack left a visible half tree (%d files in d7)", n)
				}
			}
			// The next use completes the work and cleans what the killed one left.
			got, err := s.Fetch(ctx, ref, FetchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			paths, err := s.LayerPaths(ctx, got)
			if err != nil {
				t.Fatal(err)
			}
			if n := countDir(t, filepath.Join(paths[1], "d7")); n != 20 {
				t.Errorf("unpacked layer has %d files in d7, want 20", n)
			}
			if n := countDir(t, s.tmpPath()); n != 0 {
				t.Errorf("%d temporary entries left after recovery", n)
			}
			checkConsistent(t, s)
			if phase.mode == "fetch" {
				if _, err := s.RemoveImage(got.ID, RemoveOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestTempOwnerDetection(t *testing.T) {
	if gone, known := ownerGone(tempPrefix("blob") + "123"); !known || gone {
		t.Errorf("own entry: gone=%v known=%v, want alive", gone, known)
	}
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("tree-%d.%s-1", cmd.Process.Pid, "12345")
	if gone, known := ownerGone(dead); !known || !gone {
		t.Errorf("exited owner: gone=%v known=%v", gone, known)
	}
	for _, foreign := range []string{"blob-stale", "x", "tree-abc.1-2", "tree-1.-2"} {
		if _, known := ownerGone(foreign); known {
			t.Errorf("%q: owner claimed known", foreign)
		}
	}
}
