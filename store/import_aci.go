package store

import (
	"context"
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
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
		l, err := tarball.LayerFromFile(tmp.Name())
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
