package kubeletsvc

import (
	"context"
	"encoding/base64"
	"fmt"
	"runtime/metrics"
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
	c.pullStart()
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

// pullStart begins a pull; pullDone ends it.
func (c *criService) pullStart() {
	c.pullMu.Lock()
	defer c.pullMu.Unlock()
	if c.pulls == 0 {
		c.pullAllocs = heapAllocs()
	}
	c.pulls++
}

// pullFreeMin is the heap a burst of pulls allocates from which the last
// one to end returns the free pages to the OS: a pull that downloads a
// layer allocates hundreds of KiB or more, one of an image the node has
// tens of KiB (a manifest request).
const pullFreeMin = 256 << 10

// pullDone ends a pull. A pull that downloads grows the heap by up to
// several MiB for a moment (decompression and copy buffers); the Go
// runtime keeps such pages until its background scavenger gets to them,
// so the last pull running returns them to the OS at once (a GC of the
// service's heap: a few ms, after the answer). A pull of an image the
// node has (every container start under the kubelet's Always policy) gets
// no forced GC.
func (c *criService) pullDone() {
	c.pullMu.Lock()
	defer c.pullMu.Unlock()
	c.pulls--
	if c.pulls == 0 && heapAllocs()-c.pullAllocs >= pullFreeMin {
		go c.freeOSMemory()
	}
}

// heapAllocs returns the bytes the process allocated on its heap so far.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
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
