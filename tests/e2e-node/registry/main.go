// Command registry serves the node e2e suite's stand-in images from memory
// on a loopback address, under their upstream repository names (a mirror of
// registry.k8s.io). Each image is one layer, a tar written by
// build-images.sh, and an OCI config from images.json beside it.
//
//	registry -addr 127.0.0.1:5000 -images build/e2e-node/images/images.json
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// image is one entry of images.json.
type image struct {
	Names  []string  `json:"names"` // upstream references, e.g. registry.k8s.io/pause:3.10.2
	Layer  string    `json:"layer"` // uncompressed tar, relative to images.json
	Config v1.Config `json:"config"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:5000", "listen address (loopback)")
	spec := flag.String("images", "", "images.json written by build-images.sh")
	flag.Parse()
	if err := run(*addr, *spec); err != nil {
		log.Fatal(err)
	}
}

func run(addr, spec string) error {
	images, err := load(spec)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))),
		ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()
	host := ln.Addr().String()
	for _, img := range images {
		if err := push(host, spec, img); err != nil {
			return err
		}
	}
	log.Printf("serving %d images on %s", len(images), host)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(ctx)
}

func load(spec string) ([]image, error) {
	b, err := os.ReadFile(spec)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", spec, err)
	}
	var images []image
	if err := json.Unmarshal(b, &images); err != nil {
		return nil, fmt.Errorf("cannot parse %s: %w", spec, err)
	}
	return images, nil
}

// push stores img under each of its names, with the registry host replaced
// by this server's address.
func push(host, spec string, img image) error {
	layerPath := filepath.Join(filepath.Dir(spec), img.Layer)
	layer, err := tarball.LayerFromFile(layerPath)
	if err != nil {
		return fmt.Errorf("cannot read layer %s: %w", layerPath, err)
	}
	v, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return fmt.Errorf("cannot build image %s: %w", img.Names[0], err)
	}
	cf, err := v.ConfigFile()
	if err != nil {
		return fmt.Errorf("cannot build image %s: %w", img.Names[0], err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Config = "amd64", "linux", img.Config
	if v, err = mutate.ConfigFile(v, cf); err != nil {
		return fmt.Errorf("cannot build image %s: %w", img.Names[0], err)
	}
	for _, n := range img.Names {
		ref, err := name.ParseReference(n)
		if err != nil {
			return fmt.Errorf("cannot parse %s: %w", n, err)
		}
		local := host + "/" + ref.Context().RepositoryStr() + ":" + ref.Identifier()
		lref, err := name.ParseReference(local, name.Insecure)
		if err != nil {
			return fmt.Errorf("cannot parse %s: %w", local, err)
		}
		if err := remote.Write(lref, v); err != nil {
			return fmt.Errorf("cannot push %s: %w", local, err)
		}
	}
	return nil
}
