package testutil

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// RefNameAnnotation tags a manifest in an OCI layout's index.json.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// WriteOCILayout writes img into the OCI layout at dir (created if needed,
// appended to otherwise), tagged tag when not empty.
func WriteOCILayout(t testing.TB, dir string, img v1.Image, tag string) {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			t.Fatalf("cannot create OCI layout %s: %v", dir, err)
		}
	}
	var opts []layout.Option
	if tag != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{RefNameAnnotation: tag}))
	}
	if err := p.AppendImage(img, opts...); err != nil {
		t.Fatalf("cannot write image to OCI layout %s: %v", dir, err)
	}
}

// WriteOCILayoutIndex writes an image index into the OCI layout at dir,
// tagged tag when not empty.
func WriteOCILayoutIndex(t testing.TB, dir string, idx v1.ImageIndex, tag string) {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			t.Fatalf("cannot create OCI layout %s: %v", dir, err)
		}
	}
	var opts []layout.Option
	if tag != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{RefNameAnnotation: tag}))
	}
	if err := p.AppendIndex(idx, opts...); err != nil {
		t.Fatalf("cannot write index to OCI layout %s: %v", dir, err)
	}
}

// WriteOCIArchive writes img as an oci-archive (a tar of an OCI layout) at
// path, tagged tag when not empty.
func WriteOCIArchive(t testing.TB, path string, img v1.Image, tag string) {
	t.Helper()
	dir := t.TempDir()
	WriteOCILayout(t, dir, img, tag)
	if err := TarDir(dir, path); err != nil {
		t.Fatalf("cannot write oci-archive %s: %v", path, err)
	}
}

// WriteDockerArchive writes img at path as `docker save` (before Docker
// 25) writes it: manifest.json, repositories, <config hex>.json and one
// uncompressed <diffID hex>/layer.tar per layer. ref may be empty.
func WriteDockerArchive(t testing.TB, path, ref string, img v1.Image) {
	t.Helper()
	if err := writeDockerArchive(path, ref, img); err != nil {
		t.Fatalf("cannot write docker-archive %s: %v", path, err)
	}
}

// WriteDockerArchiveGGCR writes img at path with go-containerregistry's
// tarball.Write (gzip-compressed layer blobs, as `crane save` does).
func WriteDockerArchiveGGCR(t testing.TB, path, ref string, img v1.Image) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatalf("bad reference %q: %v", ref, err)
	}
	if err := tarball.WriteToFile(path, r, img); err != nil {
		t.Fatalf("cannot write docker-archive %s: %v", path, err)
	}
}

func writeDockerArchive(path, ref string, img v1.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	add := func(name string, r io.Reader, size int64) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: Epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return err
	}
	raw, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	cfgFile := cfgName.Hex + ".json"
	if err := add(cfgFile, bytes.NewReader(raw), int64(len(raw))); err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	var layerFiles []string
	for _, l := range layers {
		diffID, err := l.DiffID()
		if err != nil {
			return err
		}
		rc, err := l.Uncompressed()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		lf := diffID.Hex + "/layer.tar"
		if err := add(lf, bytes.NewReader(b), int64(len(b))); err != nil {
			return err
		}
		layerFiles = append(layerFiles, lf)
	}
	entry := map[string]any{"Config": cfgFile, "Layers": layerFiles}
	repos := map[string]map[string]string{}
	if ref != "" {
		tag, err := name.NewTag(ref)
		if err != nil {
			return err
		}
		entry["RepoTags"] = []string{ref}
		repos[tag.Repository.Name()] = map[string]string{tag.TagStr(): layerFilesTopID(layerFiles)}
	}
	m, _ := json.Marshal([]any{entry})
	if err := add("manifest.json", bytes.NewReader(m), int64(len(m))); err != nil {
		return err
	}
	rb, _ := json.Marshal(repos)
	if err := add("repositories", bytes.NewReader(rb), int64(len(rb))); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

func layerFilesTopID(files []string) string {
	if len(files) == 0 {
		return ""
	}
	return filepath.Dir(files[len(files)-1])
}

// TarDir writes the tree at dir as an uncompressed tar at dest (sorted,
// fixed timestamps).
func TarDir(dir, dest string) error {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	f, err := os.Create(dest)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h.Name, h.ModTime, h.Uname, h.Gname = filepath.ToSlash(rel), Epoch, "", ""
		h.AccessTime, h.ChangeTime = time.Time{}, time.Time{}
		if fi.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			src, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, src)
			src.Close()
			if err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
