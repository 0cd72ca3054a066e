package store

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Manifest returns the raw image manifest of img as the registry served it.
func (s *Store) Manifest(img *Image) ([]byte, error) {
	return s.ReadBlob(img.ManifestDigest)
}

// ConfigJSON returns the raw image configuration of img.
func (s *Store) ConfigJSON(img *Image) ([]byte, error) {
	return s.ReadBlob(img.ID)
}

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type ociIndex struct {
	SchemaVersion int             `json:"schemaVersion"`
	MediaType     string          `json:"mediaType"`
	Manifests     []ociDescriptor `json:"manifests"`
}

// ExportOCIArchive writes img to w as an oci-archive (a tar of an OCI image
// layout) that `rkt fetch oci-archive:` and other tools read back. name,
// if not empty, is a name:tag recorded in the index annotations.
func (s *Store) ExportOCIArchive(ctx context.Context, img *Image, name string, w io.Writer) error {
	manifest, err := s.Manifest(img)
	if err != nil {
		return err
	}
	desc := ociDescriptor{MediaType: img.ManifestMediaType, Digest: img.ManifestDigest, Size: int64(len(manifest))}
	if name != "" {
		r, err := ParseReference(name)
		if err != nil {
			return err
		}
		desc.Annotations = map[string]string{annotationContainerdName: r.String()}
		if r.Tag != "" {
			desc.Annotations[annotationRefName] = r.Tag
		}
	}
	index, err := json.Marshal(ociIndex{SchemaVersion: 2, MediaType: "application/vnd.oci.image.index.v1+json", Manifests: []ociDescriptor{desc}})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	now := time.Now()
	writeBytes := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: now, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Mode: 0o755, ModTime: now, Typeflag: tar.TypeDir}); err != nil {
			return fmt.Errorf("cannot write archive: %w", err)
		}
	}
	if err := writeBytes("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return fmt.Errorf("cannot write archive: %w", err)
	}
	if err := writeBytes("index.json", index); err != nil {
		return fmt.Errorf("cannot write archive: %w", err)
	}
	for _, d := range imageBlobs(img) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.exportBlob(tw, d, now); err != nil {
			return fmt.Errorf("cannot export blob %s of image %s: %w", d, img.ID, err)
		}
	}
	return tw.Close()
}

func (s *Store) exportBlob(tw *tar.Writer, d string, now time.Time) error {
	h, err := digestHex(d)
	if err != nil {
		return err
	}
	f, err := s.OpenBlob(d)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "blobs/sha256/" + h, Mode: 0o644, Size: fi.Size(), ModTime: now, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}
