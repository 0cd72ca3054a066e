package store

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// mutateDiffID returns img with a config whose diff ID for layer 0 is wrong.
func mutateDiffID(t *testing.T, img v1.Image) v1.Image {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.RootFS.DiffIDs[0] = v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &rawConfigImage{Image: img, raw: raw}
}

// rawConfigImage replaces an image's config, keeping its layers.
type rawConfigImage struct {
	v1.Image
	raw []byte
}

func (r *rawConfigImage) RawConfigFile() ([]byte, error) { return r.raw, nil }
func (r *rawConfigImage) ConfigFile() (*v1.ConfigFile, error) {
	return v1.ParseConfigFile(bytes.NewReader(r.raw))
}
func (r *rawConfigImage) ConfigName() (v1.Hash, error) {
	h, _, err := v1.SHA256(bytes.NewReader(r.raw))
	return h, err
}
func (r *rawConfigImage) Manifest() (*v1.Manifest, error) {
	m, err := r.Image.Manifest()
	if err != nil {
		return nil, err
	}
	m = m.DeepCopy()
	m.Config.Digest, _ = r.ConfigName()
	m.Config.Size = int64(len(r.raw))
	return m, nil
}
func (r *rawConfigImage) RawManifest() ([]byte, error) {
	m, err := r.Manifest()
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}
func (r *rawConfigImage) Digest() (v1.Hash, error) {
	b, err := r.RawManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	h, _, err := v1.SHA256(bytes.NewReader(b))
	return h, err
}
