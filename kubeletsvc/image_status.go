package kubeletsvc

import (
	"context"
	"errors"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/store"
)

// ImageStatus returns an image's status. api.proto: "If the image is not
// present, returns a response with ImageStatusResponse.Image set to nil."
func (c *criService) ImageStatus(ctx context.Context, r *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	ref := r.GetImage().GetImage()
	if ref == "" {
		return nil, invalidf("no image given")
	}
	img, err := c.store.ResolveImage(ref)
	if errors.Is(err, store.ErrImageNotFound) || errors.Is(err, store.ErrInvalidRef) {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ImageStatusResponse{Image: criImage(img)}
	if r.GetVerbose() {
		resp.Info = map[string]string{"info": toJSON(map[string]any{
			"id":             img.ID,
			"manifestDigest": img.ManifestDigest,
			"layers":         img.Layers,
			"importedAt":     img.ImportedAt,
			"lastUsedAt":     img.LastUsedAt,
			"config":         img.Config,
		})}
	}
	return resp, nil
}
