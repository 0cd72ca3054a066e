package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What FuzzRegistryImage's registry answers with the fuzzed bytes.
const (
	fuzzManifest = iota // the manifest of the pulled tag
	fuzzConfig          // the config blob of a manifest naming it and the good layers
	fuzzModes
)

func sha256Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// FuzzRegistryImage pulls from a registry that answers with arbitrary
// bytes, as a hostile or broken one may: the manifest of the tag (served
// with the media type it names and its own digest, so that only its
// content is wrong) or the image config (named with its digest by a
// manifest of good layers). The pull never panics and ends within its
// deadline; a refused pull stores nothing, and an accepted one is a
// complete image whose config is the one served.
func FuzzRegistryImage(f *testing.F) {
	reg := startRegistry(f)
	img := testImage(f, "A=1",
		[]entry{{name: "bin/", typ: '5'}, {name: "bin/sh", body: "#!", mode: 0o755}},
		[]entry{{name: "etc/motd", body: "hi"}})
	reg.push(f, "fuzz/base:1", img)
	rawManifest, err := img.RawManifest()
	if err != nil {
		f.Fatal(err)
	}
	rawConfig, err := img.RawConfigFile()
	if err != nil {
		f.Fatal(err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		f.Fatal(err)
	}
	index := mustJSON(f, v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{{
		MediaType: manifest.MediaType, Digest: v1.Hash{Algorithm: "sha256", Hex: strings.TrimPrefix(sha256Digest(rawManifest), "sha256:")},
		Size: int64(len(rawManifest)), Platform: &v1.Platform{OS: "linux", Architecture: platform(FetchOptions{}).Architecture},
	}}})
	f.Add(byte(fuzzManifest), rawManifest)
	f.Add(byte(fuzzManifest), index)
	f.Add(byte(fuzzManifest), []byte(`{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json","config":{"digest":"sha256:00","size":-1},"layers":[{"digest":"sha256:`+strings.Repeat("0", 64)+`","size":9223372036854775807}]}`))
	f.Add(byte(fuzzConfig), rawConfig)
	f.Add(byte(fuzzConfig), []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]},"config":{"User":"0:0","Volumes":{"/../x":{}}}}`))

	// served: the manifest of fuzz/hostile's tag and the config blob, for
	// the iteration running.
	var served struct{ manifest, config []byte }
	setHook(reg, func(w http.ResponseWriter, req *http.Request) bool {
		p := req.URL.Path
		var body []byte
		switch {
		case strings.HasPrefix(p, "/v2/fuzz/hostile/manifests/"):
			// the tag, or a digest: the good image's manifest for an
			// index naming it
			body = served.manifest
			if strings.HasSuffix(p, "/"+sha256Digest(rawManifest)) {
				body = rawManifest
			}
			var probe struct {
				MediaType string `json:"mediaType"`
			}
			json.Unmarshal(body, &probe)
			if probe.MediaType == "" {
				probe.MediaType = string(types.OCIManifestSchema1)
			}
			w.Header().Set("Content-Type", probe.MediaType)
			w.Header().Set("Docker-Content-Digest", sha256Digest(body))
		case served.config != nil && strings.HasSuffix(p, "/blobs/"+sha256Digest(served.config)):
			body = served.config
		default:
			return false
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if req.Method != http.MethodHead {
			w.Write(body)
		}
		return true
	})

	f.Fuzz(func(t *testing.T, mode byte, body []byte) {
		switch mode % fuzzModes {
		case fuzzManifest:
			served.manifest, served.config = body, nil
		case fuzzConfig:
			m := *manifest
			m.Config = v1.Descriptor{MediaType: types.OCIConfigJSON, Size: int64(len(body)),
				Digest: v1.Hash{Algorithm: "sha256", Hex: strings.TrimPrefix(sha256Digest(body), "sha256:")}}
			served.manifest, served.config = mustJSON(t, m), body
		}
		s := newStore(t)
		ref := reg.host + "/fuzz/hostile:1"
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		got, err := s.Pull(ctx, ref, PullOptions{FetchOptions: FetchOptions{IdleTimeout: 5 * time.Second}})
		if ctx.Err() != nil {
			t.Fatalf("pull ran into its deadline: %v", err)
		}
		if err != nil {
			assertNothingStored(t, s)
			return
		}
		res, err := s.ResolveImage(ref)
		if err != nil || res.ID != got.ID {
			t.Fatalf("pulled %s, resolved %v, %v", got.ID, res, err)
		}
		if mode%fuzzModes == fuzzConfig && got.ID != sha256Digest(body) {
			t.Errorf("image ID %s, want the served config's digest %s", got.ID, sha256Digest(body))
		}
		if got.Config == nil {
			t.Fatal("accepted image has no config")
		}
		paths, err := s.LayerPaths(ctx, got)
		if err != nil || len(paths) != len(got.Layers) {
			t.Fatalf("accepted image: %d layer paths for %d layers: %v", len(paths), len(got.Layers), err)
		}
	})
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
