package store

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/rkt/rkt/pkg/tarx"
)

// OCI layout annotations naming an image.
const (
	annotationRefName        = "org.opencontainers.image.ref.name"
	annotationContainerdName = "io.containerd.image.name"
)

// fetchOCIArchive imports an image from a tar of an OCI image layout,
// "PATH" or "PATH:tag".
func (s *Store) fetchOCIArchive(ctx context.Context, spec string, opts FetchOptions) (*Image, error) {
	path, tag := splitTag(spec, func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular()
	})
	dir, lock, err := s.newTempDir("ociarchive")
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	defer os.RemoveAll(dir)
	if err := extractLayoutArchive(path, dir); err != nil {
		return nil, err
	}
	return s.importLayout(ctx, "oci-archive:"+spec, dir, tag, opts)
}

// splitTag splits "PATH:tag" when PATH alone is not what exists says is
// there (paths may contain colons).
func splitTag(spec string, exists func(string) bool) (string, string) {
	if exists(spec) {
		return spec, ""
	}
	if i := strings.LastIndex(spec, ":"); i > 0 && !strings.Contains(spec[i+1:], "/") {
		return spec[:i], spec[i+1:]
	}
	return spec, ""
}

// fetchOCILayout imports an image from an OCI layout directory, "DIR" or
// "DIR:tag".
func (s *Store) fetchOCILayout(ctx context.Context, spec string, opts FetchOptions) (*Image, error) {
	dir, tag := splitTag(spec, func(p string) bool {
		_, err := os.Stat(filepath.Join(p, "index.json"))
		return err == nil
	})
	return s.importLayout(ctx, "oci:"+spec, dir, tag, opts)
}

// importLayout imports an image of the OCI layout in dir; src is what the
// caller named (oci:DIR[:tag], oci-archive:PATH[:tag]), for errors.
func (s *Store) importLayout(ctx context.Context, src, dir, tag string, opts FetchOptions) (*Image, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot read OCI layout %q: %w", src, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("cannot read index of OCI layout %q: %w", src, err)
	}
	var chosen []v1.Descriptor
	var refNames []string
	for _, d := range im.Manifests {
		rn := d.Annotations[annotationRefName]
		refNames = append(refNames, rn)
		if tag == "" || rn == tag || d.Annotations[annotationContainerdName] == tag {
			chosen = append(chosen, d)
		}
	}
	if len(chosen) > 1 {
		chosen = forPlatform(chosen, platform(opts))
	}
	if len(chosen) != 1 {
		if tag != "" && len(chosen) == 0 {
			return nil, fmt.Errorf("OCI layout %q has no image tagged %q (it has %q)", src, tag, refNames)
		}
		return nil, fmt.Errorf("OCI layout %q holds %d images (%q): name one as oci:DIR:tag", src, len(chosen), refNames)
	}
	d := chosen[0]
	img, err := layoutImage(idx, d, platform(opts))
	if err != nil {
		return nil, fmt.Errorf("cannot read image from OCI layout %q: %w", src, err)
	}
	var candidates []string
	if n := d.Annotations[annotationContainerdName]; n != "" {
		candidates = append(candidates, n)
	} else if rn := d.Annotations[annotationRefName]; strings.ContainsAny(rn, "/") {
		candidates = append(candidates, rn)
	}
	names, err := normalizeNames(append(candidates, opts.Name))
	if err != nil {
		return nil, err
	}
	return s.importImage(ctx, img, names, nil, opts)
}

// forPlatform keeps the descriptors of images for platform p, when that
// tells several apart (an index.json listing one image per platform).
func forPlatform(ds []v1.Descriptor, p v1.Platform) []v1.Descriptor {
	var out []v1.Descriptor
	for _, d := range ds {
		if d.Platform != nil && d.MediaType.IsImage() && d.Platform.Satisfies(p) {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return ds
	}
	return out
}

// layoutImage returns the image a layout descriptor points at: an image
// index is resolved to p's image by resolveIndex, as a registry's is.
func layoutImage(idx v1.ImageIndex, d v1.Descriptor, p v1.Platform) (v1.Image, error) {
	if !d.MediaType.IsIndex() {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("cannot read image %s: %w", d.Digest, err)
		}
		return img, nil
	}
	child, err := idx.ImageIndex(d.Digest)
	if err != nil {
		return nil, fmt.Errorf("cannot read image index %s: %w", d.Digest, err)
	}
	return resolveIndex(child, p)
}

func normalizeNames(in []string) ([]string, error) {
	var out []string
	for _, n := range in {
		if n == "" {
			continue
		}
		nn, err := NormalizeName(n)
		if err != nil {
			return nil, err
		}
		out = with(out, nn)
	}
	return out, nil
}

// extractLayoutArchive unpacks the regular files of an OCI archive into dir.
// Only regular files and directories are created, from entries that
// tarx.CheckHeader accepts, so a hostile archive cannot write elsewhere
// nor expand a sparse entry.
func extractLayoutArchive(path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cannot open OCI archive %q: %w", path, err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("corrupt OCI archive %q: %w", path, err)
		}
		if err := tarx.CheckHeader(h); err != nil {
			return fmt.Errorf("OCI archive %q: %w", path, err)
		}
		target := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return fmt.Errorf("cannot unpack OCI archive: %w", err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return fmt.Errorf("cannot unpack OCI archive: %w", err)
			}
			if err := writeFile(target, tr); err != nil {
				return fmt.Errorf("cannot unpack %q of OCI archive %q: %w", h.Name, path, err)
			}
		}
	}
}

func writeFile(path string, r io.Reader) error {
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("duplicate entry %q", path)
	}
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
