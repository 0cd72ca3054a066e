package testutil

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// ImageInfo is one entry of `rkt image list --format=json`.
type ImageInfo struct {
	ID             string    `json:"id"`
	Names          []string  `json:"names"`
	RepoDigests    []string  `json:"repoDigests"`
	ManifestDigest string    `json:"manifestDigest"`
	Size           int64     `json:"size"`
	ImportedAt     time.Time `json:"importedAt"`
	LastUsedAt     time.Time `json:"lastUsedAt"`
}

// Fetch runs `rkt fetch --no-progress [extra...] ref`, fails the test
// unless it succeeds, and returns the image ID it printed.
func (e *Env) Fetch(ref string, extra ...string) string {
	e.T.Helper()
	args := append(append([]string{"fetch", "--no-progress"}, extra...), ref)
	r := e.RunOK(args...)
	lines := strings.Fields(r.Stdout)
	if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "sha256:") {
		e.T.Fatalf("rkt fetch printed no image ID: %s", r)
	}
	return lines[len(lines)-1]
}

// ListImages runs `rkt image list --format=json` and parses it.
func (e *Env) ListImages() []ImageInfo {
	e.T.Helper()
	r := e.RunOK("image", "list", "--format=json")
	var out []ImageInfo
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		e.T.Fatalf("cannot parse image list: %v\n%s", err, r)
	}
	return out
}

// FindImage returns the listed image with the given ID, or nil.
func (e *Env) FindImage(id string) *ImageInfo {
	e.T.Helper()
	for _, img := range e.ListImages() {
		if img.ID == id {
			return &img
		}
	}
	return nil
}

// PushBusybox pushes the base busybox image to reg as repoTag and returns
// its reference and image ID: the common start of tests that need an image.
func PushBusybox(t testing.TB, reg *Registry, repoTag string) (ref, id string) {
	t.Helper()
	img := Busybox(t)
	return reg.Push(t, repoTag, img), ImageID(t, img)
}
