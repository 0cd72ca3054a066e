package tests

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// Bounds every refused fetch from a hostile registry must keep.
const (
	hostileIdleTimeout = "1s"             // RKT_FETCH_IDLE_TIMEOUT of rkt and the CRI service
	hostileMaxDuration = 20 * time.Second // wall time of one refused fetch
	hostileMaxRSS      = 150 << 20        // peak RSS of `rkt fetch`
)

// hostileCase is a registry that misbehaves in one way: setup pushes an
// image and adds the hooks, and returns the reference to fetch; the error
// must match want.
type hostileCase struct {
	name  string
	want  string // regexp
	setup func(t *testing.T, reg *testutil.Registry, stop chan struct{}) string
}

func hostileCases(t *testing.T) []hostileCase {
	img := testutil.Image(t, testutil.ImageConfig{}, testutil.RandomLayer(t, 1, "data", 4, 256<<10))
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	layer := digestOf(t, layers[0].Digest)
	config := testutil.ImageID(t, img)
	push := func(t *testing.T, reg *testutil.Registry, name string, hooks ...testutil.Hook) string {
		ref := reg.Push(t, "hostile/"+name+":1", img)
		for _, h := range hooks {
			reg.AddHook(h)
		}
		return ref
	}
	simple := func(name, want string, hook func(reg *testutil.Registry, stop chan struct{}) testutil.Hook) hostileCase {
		return hostileCase{name, want, func(t *testing.T, reg *testutil.Registry, stop chan struct{}) string {
			return push(t, reg, name, hook(reg, stop))
		}}
	}
	const manifests = "/manifests/"
	blob := "/blobs/" + layer
	tooLarge := "too large"
	return []hostileCase{
		simple("redirect-loop-manifest", "redirected too many times", func(*testutil.Registry, chan struct{}) testutil.Hook { return testutil.RedirectLoop(manifests) }),
		simple("redirect-loop-blob", "redirected too many times", func(*testutil.Registry, chan struct{}) testutil.Hook { return testutil.RedirectLoop(blob) }),
		simple("short-length-manifest", "JSON|manifest", func(r *testutil.Registry, _ chan struct{}) testutil.Hook { return r.LyingContentLength(manifests, -10) }),
		simple("long-length-manifest", "unexpected EOF", func(r *testutil.Registry, _ chan struct{}) testutil.Hook { return r.LyingContentLength(manifests, 10) }),
		simple("short-length-blob", "Content-Length", func(r *testutil.Registry, _ chan struct{}) testutil.Hook { return r.LyingContentLength(blob, -10) }),
		simple("long-length-blob", "Content-Length", func(r *testutil.Registry, _ chan struct{}) testutil.Hook { return r.LyingContentLength(blob, 10) }),
		{"manifest-digest-mismatch", "does not match requested digest", func(t *testing.T, reg *testutil.Registry, _ chan struct{}) string {
			ref := push(t, reg, "manifest-digest-mismatch")
			digest := testutil.ManifestDigest(t, img)
			other := testutil.Image(t, testutil.ImageConfig{Cmd: []string{"other"}}, layers[0])
			raw, _ := other.RawManifest()
			reg.AddHook(testutil.ServeInstead(manifests+digest, raw, "application/vnd.oci.image.manifest.v1+json"))
			return strings.TrimSuffix(ref, ":1") + "@" + digest
		}},
		{"blob-digest-mismatch", "sha256|digest", func(t *testing.T, reg *testutil.Registry, _ chan struct{}) string {
			reg.CorruptBlob(layer)
			return push(t, reg, "blob-digest-mismatch")
		}},
		{"config-digest-mismatch", "sha256|digest", func(t *testing.T, reg *testutil.Registry, _ chan struct{}) string {
			reg.CorruptBlob(config)
			return push(t, reg, "config-digest-mismatch")
		}},
		{"diffid-mismatch", "diff ID", func(t *testing.T, reg *testutil.Registry, _ chan struct{}) string {
			good, _ := testutil.TarBytes(testutil.File("a", "a"))
			gz := testutil.Gzip(good)
			liar := testutil.Image(t, testutil.ImageConfig{}, layers[0], testutil.RawLayer(gz, append(good, 0), int64(len(gz))))
			return reg.Push(t, "hostile/diffid-mismatch:1", liar)
		}},
		simple("endless-blob", "sha256|digest", func(*testutil.Registry, chan struct{}) testutil.Hook {
			return testutil.EndlessBody(blob, "application/octet-stream")
		}),
		simple("endless-manifest", tooLarge, func(*testutil.Registry, chan struct{}) testutil.Hook {
			return testutil.EndlessBody(manifests, "application/vnd.oci.image.manifest.v1+json")
		}),
		simple("oversized-manifest", tooLarge, func(*testutil.Registry, chan struct{}) testutil.Hook {
			big := fmt.Sprintf(`{"schemaVersion":2,"annotations":{"pad":%q}}`, strings.Repeat("x", 5<<20))
			return testutil.ServeInstead(manifests, []byte(big), "application/vnd.oci.image.manifest.v1+json")
		}),
		simple("oversized-config", tooLarge, func(r *testutil.Registry, _ chan struct{}) testutil.Hook {
			return r.EditManifest(manifests, func(m map[string]any) { m["config"].(map[string]any)["size"] = 5 << 20 })
		}),
		simple("stalled-manifest", "stopped sending", func(r *testutil.Registry, stop chan struct{}) testutil.Hook { return r.StalledBody(manifests, stop) }),
		simple("stalled-blob", "stopped sending", func(r *testutil.Registry, stop chan struct{}) testutil.Hook { return r.StalledBody(blob, stop) }),
		{"no-matching-platform", `no image for platform linux/\w+ \(it has: linux/s390x, windows/amd64\)`, func(t *testing.T, reg *testutil.Registry, _ chan struct{}) string {
			idx := testutil.Index(t,
				testutil.PlatformImage{OS: "linux", Architecture: "s390x", Image: img},
				testutil.PlatformImage{OS: "windows", Architecture: "amd64", Image: img})
			return reg.PushIndex(t, "hostile/no-matching-platform:1", idx)
		}},
		{"index-chain", "nested too deep", func(t *testing.T, reg *testutil.Registry, _ chan struct{}) string {
			// 50 indexes, each the only child of the next, above the image
			idx := testutil.Index(t, testutil.PlatformImage{OS: "linux", Architecture: runtime.GOARCH, Image: img})
			for i := 0; i < 50; i++ {
				idx = mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{Add: idx})
			}
			return reg.PushIndex(t, "hostile/index-chain:1", idx)
		}},
	}
}

func digestOf(t *testing.T, f func() (v1.Hash, error)) string {
	t.Helper()
	h, err := f()
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// startHostile starts a registry for one case and returns it and the
// reference to fetch.
func startHostile(t *testing.T, hc hostileCase) string {
	reg := testutil.StartRegistry(t)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) }) // before the registry closes
	return hc.setup(t, reg, stop)
}

// assertNothingStored fails unless the store holds no image, blob, tree or
// temporary entry: a refused fetch leaves nothing, not even for GC.
func assertNothingStored(t *testing.T, env *testutil.Env, what string) {
	t.Helper()
	if imgs := env.ListImages(); len(imgs) != 0 {
		t.Errorf("%s: %d images listed", what, len(imgs))
	}
	for _, sub := range [][]string{{"tmp"}, {"tree"}, {"blobs", "sha256"}} {
		if left := dirEntries(t, casDir(env.DataDir, sub...)); len(left) != 0 {
			t.Errorf("%s: left in cas/%s: %v", what, strings.Join(sub, "/"), left)
		}
	}
}

// TestFetchHostileRegistry: `rkt fetch` from each hostile registry fails
// fast with an error naming the image and the problem, in bounded memory,
// and leaves the store as it was.
func TestFetchHostileRegistry(t *testing.T) {
	env := testutil.NewEnv(t)
	env.ExtraEnv = append(env.ExtraEnv, "RKT_FETCH_IDLE_TIMEOUT="+hostileIdleTimeout)
	for _, hc := range hostileCases(t) {
		t.Run(hc.name, func(t *testing.T) {
			env := env.WithT(t)
			ref := startHostile(t, hc)
			r := env.Run("fetch", "--no-progress", ref)
			t.Logf("exit %d in %v, max RSS %d MiB: %s", r.Code, r.Duration.Round(time.Millisecond), r.MaxRSS>>20, firstLine(r.Stderr))
			if r.Code == 0 {
				t.Fatalf("fetch from a hostile registry succeeded: %s", r)
			}
			if strings.Contains(r.Stderr, "panic") || !regexp.MustCompile(hc.want).MatchString(r.Stderr) {
				t.Errorf("error does not match %q: %s", hc.want, r.Stderr)
			}
			if !strings.Contains(r.Stderr, "hostile/"+hc.name) {
				t.Errorf("error does not name the image: %s", r.Stderr)
			}
			if r.Duration > hostileMaxDuration {
				t.Errorf("refusal took %v", r.Duration)
			}
			if r.MaxRSS > hostileMaxRSS {
				t.Errorf("rkt fetch peaked at %d MiB", r.MaxRSS>>20)
			}
			assertNothingStored(t, env, hc.name)
		})
	}
	// The store still works.
	reg := testutil.StartRegistry(t)
	ref, id := testutil.PushBusybox(t, reg, "fine:1")
	if got := env.Fetch(ref); got != id {
		t.Errorf("fetch after the hostile registries printed %s, want %s", got, id)
	}
}

// TestCRIPullHostileRegistry: PullImage from each hostile registry fails
// with an error naming the problem, leaves nothing in the store, and the
// service stays up in bounded memory, with a gRPC code that says so.
func TestCRIPullHostileRegistry(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	env.ExtraEnv = append(env.ExtraEnv, "RKT_FETCH_IDLE_TIMEOUT="+hostileIdleTimeout)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	codes := map[string]string{}
	for _, hc := range hostileCases(t) {
		t.Run(hc.name, func(t *testing.T) {
			ref := startHostile(t, hc)
			start := time.Now()
			_, err := c.PullImage(rpcCtx(t), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
			d := time.Since(start)
			codes[hc.name] = statusCode(err)
			t.Logf("%s in %v: %v", statusCode(err), d.Round(time.Millisecond), err)
			if err == nil {
				t.Fatal("PullImage from a hostile registry succeeded")
			}
			// the cause is the registry: never Unknown; a stall may be retried
			want := "FailedPrecondition"
			switch {
			case strings.HasPrefix(hc.name, "stalled"):
				want = "Unavailable"
			case strings.Contains(hc.name, "platform"):
				want = "NotFound"
			}
			if statusCode(err) != want {
				t.Errorf("code %s, want %s", statusCode(err), want)
			}
			if !regexp.MustCompile(hc.want).MatchString(err.Error()) || !strings.Contains(err.Error(), "hostile/"+hc.name) {
				t.Errorf("error does not match %q or name the image: %v", hc.want, err)
			}
			if d > hostileMaxDuration {
				t.Errorf("refusal took %v", d)
			}
			l, err := c.ListImages(rpcCtx(t), &runtimeapi.ListImagesRequest{})
			must(t, "ListImages", err)
			if len(l.Images) != 0 {
				t.Errorf("images listed after a refused pull: %v", l.Images)
			}
			assertNothingStored(t, env.WithT(t), hc.name)
		})
	}
	t.Logf("PullImage codes: %v", codes)
	if hwm := peakRSS(t, svc.cmd.Process.Pid); hwm > 2*hostileMaxRSS {
		t.Errorf("kubelet-service peaked at %d MiB", hwm>>20)
	} else {
		t.Logf("kubelet-service peak RSS %d MiB", hwm>>20)
	}
}

// peakRSS reads a process's peak resident memory (VmHWM) in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

func firstLine(s string) string { return strings.SplitN(strings.TrimSpace(s), "\n", 2)[0] }
