package kubeletsvc

import (
	"context"
	"encoding/base64"
	"fmt"
	"runtime/debug"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/store"
	"github.com/rkt/rkt/store/regconfig"
)

// PullImage fetches an image into the store, through the registry mirrors
// and with the credentials of rkt's configuration directories, or with the
// auth the kubelet passes. It returns the image ID (its config digest).
func (c *criService) PullImage(ctx context.Context, r *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref := r.GetImage().GetImage()
	if ref == "" {
		return nil, invalidf("no image to pull")
	}
	regs, err := regconfig.Load(c.cfg.ConfigDirs...)
	if err != nil {
		return nil, fmt.Errorf("cannot load the registry configuration: %w", err)
	}
	auth, err := pullAuth(r.GetAuth())
	if err != nil {
		return nil, err
	}
	c.pulls.Add(1)
	defer c.pullDone()
	img, err := c.store.Pull(ctx, ref, store.PullOptions{
		FetchOptions: store.FetchOptions{
			PullPolicy:   store.PullUpdate,
			Auth:         auth,
			Registries:   regs,
			InsecureHTTP: c.cfg.InsecureHTTP,
			RegistryOnly: true, // a pod spec's image must not read the host's files
		},
		InUse: c.rt.ImagesInUse,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("cannot pull image %q: %w (%v)", ref, ctx.Err(), err)
		}
		return nil, fmt.Errorf("cannot pull image %q: %w", ref, err)
	}
	return &runtimeapi.PullImageResponse{ImageRef: img.ID}, nil
}

// pullDone ends a pull. A pull grows the heap by several MiB for a moment
// (decompression and copy buffers); the Go runtime keeps such pages until
// its background scavenger gets to them, so the last pull running returns
// them to the OS at once (a GC of the service's heap: a few ms, after the
// answer).
func (c *criService) pullDone() {
	if c.pulls.Add(-1) == 0 {
		go debug.FreeOSMemory()
	}
}

// pullAuth translates the kubelet's registry credentials.
func pullAuth(a *runtimeapi.AuthConfig) (*store.Auth, error) {
	if a == nil {
		return nil, nil
	}
	out := &store.Auth{
		Username:      a.GetUsername(),
		Password:      a.GetPassword(),
		IdentityToken: a.GetIdentityToken(),
		RegistryToken: a.GetRegistryToken(),
	}
	if a.GetAuth() != "" && out.Username == "" {
		b, err := base64.StdEncoding.DecodeString(a.GetAuth())
		if err != nil {
			return nil, invalidf("auth config: bad base64 in auth: %v", err)
		}
		user, pass, ok := strings.Cut(string(b), ":")
		if !ok {
			return nil, invalidf("auth config: auth is not user:password")
		}
		out.Username, out.Password = user, pass
	}
	if *out == (store.Auth{}) {
		return nil, nil
	}
	return out, nil
}
