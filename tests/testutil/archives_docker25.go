package testutil

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// WriteDockerArchiveOCI writes img at path as `docker save` writes it since
// Docker 25: an OCI image layout (index.json, oci-layout, blobs/sha256/
// with uncompressed layer tars and an OCI manifest) plus the legacy
// manifest.json whose paths point into blobs/. The config, hence the image
// ID, is unchanged. ref may be empty.
func WriteDockerArchiveOCI(t testing.TB, path, ref string, img v1.Image) {
	t.Helper()
	if err := writeDockerArchiveOCI(path, ref, img); err != nil {
		t.Fatalf("cannot write docker-archive %s: %v", path, err)
	}
}

type ociDesc struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func writeDockerArchiveOCI(path, ref string, img v1.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	add := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: Epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	blob := func(b []byte) (string, error) {
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])
		return "sha256:" + h, add("blobs/sha256/"+h, b)
	}
	if err := tw.WriteHeader(&tar.Header{Name: "blobs/sha256/", Mode: 0o755, ModTime: Epoch, Typeflag: tar.TypeDir}); err != nil {
		return err
	}
	raw, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	cfgDigest, err := blob(raw)
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	manifest := map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        ociDesc{MediaType: "application/vnd.oci.image.config.v1+json", Digest: cfgDigest, Size: int64(len(raw))},
	}
	var layerDescs []ociDesc
	var layerPaths []string
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		d, err := blob(b)
		if err != nil {
			return err
		}
		layerDescs = append(layerDescs, ociDesc{MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: d, Size: int64(len(b))})
		layerPaths = append(layerPaths, "blobs/sha256/"+d[len("sha256:"):])
	}
	manifest["layers"] = layerDescs
	mb, _ := json.Marshal(manifest)
	mDigest, err := blob(mb)
	if err != nil {
		return err
	}
	desc := ociDesc{MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: mDigest, Size: int64(len(mb))}
	entry := map[string]any{"Config": "blobs/sha256/" + cfgDigest[len("sha256:"):], "Layers": layerPaths}
	if ref != "" {
		desc.Annotations = map[string]string{"io.containerd.image.name": ref}
		entry["RepoTags"] = []string{ref}
	}
	ib, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []ociDesc{desc}})
	mj, _ := json.Marshal([]any{entry})
	for _, fb := range []struct {
		name string
		b    []byte
	}{
		{"index.json", ib},
		{"manifest.json", mj},
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
	} {
		if err := add(fb.name, fb.b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
