package kubeletsvc

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/store"
)

// ListImages lists the store's images, or the one a filter names.
func (c *criService) ListImages(ctx context.Context, r *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	imgs, err := c.images(r.GetFilter())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListImagesResponse{Images: imgs}, nil
}

// StreamImages is ListImages in batches (sendBatches).
func (c *criService) StreamImages(r *runtimeapi.StreamImagesRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamImagesResponse]) error {
	imgs, err := c.images(r.GetFilter())
	if err != nil {
		return err
	}
	return sendBatches(stream, imgs, func(b []*runtimeapi.Image) *runtimeapi.StreamImagesResponse {
		return &runtimeapi.StreamImagesResponse{Images: b}
	})
}

func (c *criService) images(f *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	if ref := f.GetImage().GetImage(); ref != "" {
		img, err := c.store.ResolveImage(ref)
		if errors.Is(err, store.ErrImageNotFound) || errors.Is(err, store.ErrInvalidRef) {
			return []*runtimeapi.Image{}, nil
		}
		if err != nil {
			return nil, err
		}
		return []*runtimeapi.Image{criImage(img)}, nil
	}
	all, err := c.store.ListImages()
	if err != nil {
		return nil, err
	}
	out := make([]*runtimeapi.Image, 0, len(all))
	for _, img := range all {
		out = append(out, criImage(img))
	}
	return out, nil
}

// criImage describes a store image for the CRI.
func criImage(img *store.Image) *runtimeapi.Image {
	out := &runtimeapi.Image{
		Id:          img.ID,
		RepoTags:    append([]string{}, img.Names...),
		RepoDigests: append([]string{}, img.RepoDigests...),
		Size:        uint64(img.Size),
		Spec:        &runtimeapi.ImageSpec{Image: img.ID},
	}
	if img.Config != nil {
		uid, name := imageUser(img.Config.Config.User)
		if uid != nil {
			out.Uid = &runtimeapi.Int64Value{Value: *uid}
		}
		out.Username = name
	}
	return out
}

// imageUser splits an image's USER into a numeric uid or a user name (the
// group part is ignored, as the kubelet only checks the user).
func imageUser(user string) (*int64, string) {
	u, _, _ := strings.Cut(user, ":")
	if u == "" {
		return nil, ""
	}
	if n, err := strconv.ParseInt(u, 10, 64); err == nil {
		return &n, ""
	}
	return nil, u
}
