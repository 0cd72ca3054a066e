package store

import (
	"context"
	"fmt"
	"io"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ACIOptions tune ImportACI.
type ACIOptions struct {
	// Dependency returns the path of the ACI that a dependency names by
	// image ID ("sha512-..."); nil refuses ACIs with dependencies.
	Dependency func(id string) (string, error)
	// Key returns the key an ACI file must match (see writeACILayer), ""
	// for none; nil checks none.
	Key func(path string) string
}

// ImportACI stores the ACI (rkt 1.x's image format) at path as an image
// with one layer per ACI of its dependency chain, named opts.Name or else
// ACIReference of its manifest. Importing the same ACI again gives the
// same image ID.
func (s *Store) ImportACI(ctx context.Context, path string, aopts ACIOptions, opts FetchOptions) (*Image, error) {
	return s.underFetchLock(ctx, opts, func(opts FetchOptions) (*Image, error) {
		return s.importACI(ctx, path, aopts, opts)
	})
}

// importACI is ImportACI under the fetch lock.
func (s *Store) importACI(ctx context.Context, path string, aopts ACIOptions, opts FetchOptions) (*Image, error) {
	m, err := ReadACIManifest(path)
	if err != nil {
		return nil, err
	}
	chain, err := aciChain(path, m, aopts.Dependency)
	if err != nil {
		return nil, err
	}
	var layers []v1.Layer
	for _, link := range chain {
		p := link.path
		tmp, err := s.newTempFile("aci")
		if err != nil {
			return nil, err
		}
		defer func() {
			os.Remove(tmp.Name())
			tmp.Close() // after the removal: the lock keeps cleanTemp off it
		}()
		key := ""
		if aopts.Key != nil {
			key = aopts.Key(p)
		}
		if err := writeACILayer(p, link.m, tmp, key); err != nil {
			return nil, err
		}
		l, err := aciLayerOf(tmp.Name())
		if err != nil {
			return nil, fmt.Errorf("cannot read the layer of ACI %q: %w", p, err)
		}
		layers = append(layers, l)
	}
	img, err := mutate.ConfigFile(empty.Image, ACIConfig(m))
	if err == nil {
		img, err = mutate.AppendLayers(img, layers...)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot make an image of ACI %q: %w", path, err)
	}
	name := opts.Name
	if name == "" {
		if name, err = ACIReference(m); err != nil {
			return nil, err
		}
	}
	names, err := normalizeNames([]string{name})
	if err != nil {
		return nil, err
	}
	return s.importImage(ctx, img, names, nil, opts)
}

// aciLayer is the uncompressed tar of one ACI of a chain; partial gzips it
// as tarball.LayerFromFile does (gzip.BestSpeed, the same bytes, so the
// same digests), without linking tarball's zstd encoder into rkt.
type aciLayer struct {
	path   string
	diffID v1.Hash
}

// aciLayerOf returns the layer of the uncompressed tar at path.
func aciLayerOf(path string) (v1.Layer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open layer %s: %w", path, err)
	}
	defer f.Close()
	h, _, err := v1.SHA256(f)
	if err != nil {
		return nil, fmt.Errorf("cannot read layer %s: %w", path, err)
	}
	return partial.UncompressedToLayer(&aciLayer{path: path, diffID: h})
}

func (l *aciLayer) DiffID() (v1.Hash, error)             { return l.diffID, nil }
func (l *aciLayer) Uncompressed() (io.ReadCloser, error) { return os.Open(l.path) }
func (l *aciLayer) MediaType() (types.MediaType, error)  { return types.DockerLayer, nil }
