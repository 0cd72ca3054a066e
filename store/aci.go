package store

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/bzip2"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/klauspost/compress/gzip"

	"github.com/rkt/rkt/pkg/tarx"
)

// An ACI (App Container Image, rkt 1.x's image format) is a tar holding
// "manifest" (its image manifest, JSON) and "rootfs/" (its files),
// possibly compressed. The store takes it as a one-layer image (plus one
// layer per dependency) whose config comes from the manifest's app.

// ErrUnsupportedACI marks an ACI this rkt cannot take as an image.
var ErrUnsupportedACI = errors.New("unsupported ACI")

// maxACIManifestSize bounds an ACI's manifest.
const maxACIManifestSize = 1 << 20

// ACIManifest is the part of an ACI image manifest rkt uses.
type ACIManifest struct {
	ACKind        string   `json:"acKind"`
	ACVersion     string   `json:"acVersion"`
	Name          string   `json:"name"`
	Labels        []aciKV  `json:"labels,omitempty"`
	App           *aciApp  `json:"app,omitempty"`
	Annotations   []aciKV  `json:"annotations,omitempty"`
	Dependencies  []aciDep `json:"dependencies,omitempty"`
	PathWhitelist []string `json:"pathWhitelist,omitempty"`
}

type aciKV struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type aciApp struct {
	Exec             []string `json:"exec,omitempty"`
	User             string   `json:"user"`
	Group            string   `json:"group"`
	WorkingDirectory string   `json:"workingDirectory,omitempty"`
	Environment      []aciKV  `json:"environment,omitempty"`
	MountPoints      []struct {
		Name string `json:"name"`
		Path string `json:"path"`
	} `json:"mountPoints,omitempty"`
	Ports []struct {
		Name     string `json:"name"`
		Protocol string `json:"protocol"`
		Port     int    `json:"port"`
	} `json:"ports,omitempty"`
}

type aciDep struct {
	ImageName string  `json:"imageName"`
	ImageID   string  `json:"imageID,omitempty"`
	Labels    []aciKV `json:"labels,omitempty"`
}

// Label returns the value of a label of the manifest, "" if absent.
func (m *ACIManifest) Label(name string) string {
	for _, l := range m.Labels {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}

// openACI opens an ACI file, decompressing gzip and bzip2 (xz is not
// read: rkt 1.x's store holds its ACIs uncompressed).
func openACI(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open ACI %q: %w", path, err)
	}
	br := bufio.NewReader(f)
	magic, _ := br.Peek(6)
	var r io.Reader = br
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		gz, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("cannot read ACI %q: %w", path, err)
		}
		r = gz
	case bytes.HasPrefix(magic, []byte("BZh")):
		r = bzip2.NewReader(br)
	case bytes.HasPrefix(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		f.Close()
		return nil, fmt.Errorf("ACI %q is xz-compressed: %w (decompress it with xz -d first)", path, ErrUnsupportedACI)
	}
	return struct {
		io.Reader
		io.Closer
	}{r, f}, nil
}

// ReadACIManifest reads the image manifest of the ACI file at path.
func ReadACIManifest(path string) (*ACIManifest, error) {
	rc, err := openACI(path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("ACI %q has no manifest: %w", path, ErrUnsupportedACI)
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read ACI %q: %w", path, err)
		}
		if cleanACIPath(h.Name) != "manifest" || h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size > maxACIManifestSize {
			return nil, fmt.Errorf("manifest of ACI %q has %d bytes: %w", path, h.Size, ErrTooLarge)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("cannot read the manifest of ACI %q: %w", path, err)
		}
		var m ACIManifest
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("cannot parse the manifest of ACI %q: %w", path, err)
		}
		if m.ACKind != "ImageManifest" || m.Name == "" {
			return nil, fmt.Errorf("ACI %q: manifest of kind %q named %q: %w", path, m.ACKind, m.Name, ErrUnsupportedACI)
		}
		return &m, nil
	}
}

// cleanACIPath strips "./" and "/" prefixes of a tar entry name.
func cleanACIPath(name string) string {
	for {
		n := strings.TrimPrefix(strings.TrimPrefix(name, "./"), "/")
		if n == name {
			return n
		}
		name = n
	}
}

// writeACILayer writes the rootfs of the ACI at path to w as a layer tar:
// entries under rootfs/ with that prefix taken off, nothing else.
func writeACILayer(path string, w io.Writer) error {
	rc, err := openACI(path)
	if err != nil {
		return err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	tw := tar.NewWriter(w)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("cannot read ACI %q: %w", path, err)
		}
		name, ok := strings.CutPrefix(cleanACIPath(h.Name), "rootfs/")
		if !ok || strings.Trim(name, "/") == "" {
			continue // the manifest, rootfs/ itself
		}
		if tarx.IsSparse(h) {
			// a few bytes could stand for terabytes of layer
			return fmt.Errorf("ACI %q: %q: %w: %w", path, h.Name, tarx.ErrSparse, ErrUnsupportedACI)
		}
		h.Name = name
		if h.Typeflag == tar.TypeLink {
			link, ok := strings.CutPrefix(cleanACIPath(h.Linkname), "rootfs/")
			if !ok {
				return fmt.Errorf("ACI %q: hard link %q points outside rootfs/: %w", path, h.Name, ErrUnsupportedACI)
			}
			h.Linkname = link
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("cannot convert ACI %q: %w", path, err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return fmt.Errorf("cannot convert ACI %q: %w", path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("cannot convert ACI %q: %w", path, err)
	}
	return nil
}

// ACIConfig maps an ACI image manifest to an image config: exec is the
// entrypoint; environment, user:group, working directory, ports and mount
// points carry over; labels and annotations become labels.
func ACIConfig(m *ACIManifest) *v1.ConfigFile {
	cfg := &v1.ConfigFile{OS: runtime.GOOS, Architecture: runtime.GOARCH}
	if os := m.Label("os"); os != "" {
		cfg.OS = os
	}
	switch arch := m.Label("arch"); arch {
	case "":
	case "aarch64":
		cfg.Architecture = "arm64"
	case "i386":
		cfg.Architecture = "386"
	case "armv7l", "armv7b":
		cfg.Architecture, cfg.Variant = "arm", "v7"
	case "armv6l":
		cfg.Architecture, cfg.Variant = "arm", "v6"
	default:
		cfg.Architecture = arch
	}
	labels := map[string]string{"io.rkt.aci.name": m.Name}
	for _, l := range m.Labels {
		labels["io.rkt.aci.label."+l.Name] = l.Value
	}
	for _, a := range m.Annotations {
		labels[a.Name] = a.Value
		if a.Name == "created" {
			if t, err := time.Parse(time.RFC3339, a.Value); err == nil {
				cfg.Created = v1.Time{Time: t}
			}
		}
	}
	cfg.Config.Labels = labels
	if a := m.App; a != nil {
		cfg.Config.Entrypoint = a.Exec
		cfg.Config.WorkingDir = a.WorkingDirectory
		switch {
		case a.User != "" && a.Group != "":
			cfg.Config.User = a.User + ":" + a.Group
		default:
			cfg.Config.User = a.User
		}
		for _, e := range a.Environment {
			cfg.Config.Env = append(cfg.Config.Env, e.Name+"="+e.Value)
		}
		for _, p := range a.Ports {
			if cfg.Config.ExposedPorts == nil {
				cfg.Config.ExposedPorts = map[string]struct{}{}
			}
			cfg.Config.ExposedPorts[fmt.Sprintf("%d/%s", p.Port, p.Protocol)] = struct{}{}
		}
		for _, mp := range a.MountPoints {
			if cfg.Config.Volumes == nil {
				cfg.Config.Volumes = map[string]struct{}{}
			}
			cfg.Config.Volumes[mp.Path] = struct{}{}
		}
	}
	return cfg
}

// tagChar maps a character a tag cannot hold to '_'.
func tagChar(r rune) rune {
	if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '.' || r == '-' {
		return r
	}
	return '_'
}

// ACIReference is the name the store records an ACI under: its name and
// version label ("latest" if none) as name:tag. A name whose first
// component is no host ("busybox", "example/app") goes under localhost/,
// so an ACI never takes a Docker Hub name.
func ACIReference(m *ACIManifest) (string, error) {
	name := strings.ToLower(m.Name)
	first, _, _ := strings.Cut(name, "/")
	if !strings.ContainsAny(first, ".:") && first != "localhost" {
		name = "localhost/" + name
	}
	tag := strings.Map(tagChar, m.Label("version"))
	tag = strings.TrimLeft(tag, ".-")
	if len(tag) > 128 {
		tag = tag[:128]
	}
	if tag == "" {
		tag = "latest"
	}
	ref, err := NormalizeName(name + ":" + tag)
	if err != nil {
		return "", fmt.Errorf("ACI name %q: %w", m.Name, err)
	}
	return ref, nil
}

// aciChain returns the ACI files whose rootfs make up the image of the ACI
// at path, lowest first: its dependencies (found by image ID through dep,
// recursively), then itself.
func aciChain(path string, m *ACIManifest, dep func(id string) (string, error), seen map[string]bool) ([]string, error) {
	if len(m.PathWhitelist) > 0 {
		return nil, fmt.Errorf("ACI %s has a path whitelist: %w", m.Name, ErrUnsupportedACI)
	}
	var chain []string
	for _, d := range m.Dependencies {
		if d.ImageID == "" || dep == nil {
			return nil, fmt.Errorf("ACI %s depends on %s by name only: %w", m.Name, d.ImageName, ErrUnsupportedACI)
		}
		if seen[d.ImageID] {
			return nil, fmt.Errorf("ACI %s: dependency loop at %s: %w", m.Name, d.ImageID, ErrUnsupportedACI)
		}
		seen[d.ImageID] = true
		p, err := dep(d.ImageID)
		if err != nil {
			return nil, fmt.Errorf("ACI %s: dependency %s (%s): %w", m.Name, d.ImageName, d.ImageID, err)
		}
		dm, err := ReadACIManifest(p)
		if err != nil {
			return nil, err
		}
		sub, err := aciChain(p, dm, dep, seen)
		if err != nil {
			return nil, err
		}
		chain = append(chain, sub...)
	}
	return append(chain, path), nil
}
