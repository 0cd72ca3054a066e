package main

import (
	"fmt"

	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/store"
	"github.com/rkt/rkt/store/regconfig"
)

// openStore opens the image store of the data directory given by --dir.
func openStore() (*store.Store, error) {
	s, err := store.Open(globals.Dir)
	if err != nil {
		return nil, fmt.Errorf("cannot open the image store: %w", err)
	}
	return s, nil
}

// openImage opens the store and resolves ref (ID, ID prefix or name) in it.
func openImage(ref string) (*store.Store, *store.Image, error) {
	s, err := openStore()
	if err != nil {
		return nil, nil, err
	}
	img, err := s.ResolveImage(ref)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot find image %q: %w", ref, err)
	}
	return s, img, nil
}

// loadRegistryConfig reads credentials and mirrors from the system, local
// and user config directories, later ones winning.
func loadRegistryConfig() (*regconfig.Config, error) {
	c, err := regconfig.Load(globals.SystemConfig, globals.LocalConfig, globals.UserConfig)
	if err != nil {
		return nil, fmt.Errorf("cannot load the registry configuration: %w", err)
	}
	return c, nil
}

// openStoreInUse opens the image store and finds the images its pods use
// (what image gc and rm must keep).
func openStoreInUse() (*store.Store, map[string]bool, error) {
	s, err := openStore()
	if err != nil {
		return nil, nil, err
	}
	inUse, err := imagesInUse()
	if err != nil {
		return nil, nil, err
	}
	return s, inUse, nil
}

// imagesInUse returns the IDs of the images that pods of --dir reference.
func imagesInUse() (map[string]bool, error) {
	inUse, err := stage0.ImagesInUse(globals.Dir)
	if err != nil {
		return nil, fmt.Errorf("cannot find the images pods use: %w", err)
	}
	return inUse, nil
}
