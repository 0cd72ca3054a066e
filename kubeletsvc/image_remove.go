package kubeletsvc

import (
	"context"
	"errors"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/store"
)

// RemoveImage removes an image and all its tags, by any reference.
// api.proto: "This call is idempotent, and must not return an error if the
// image has already been removed." An image a pod uses is refused
// (FailedPrecondition).
func (c *criService) RemoveImage(ctx context.Context, r *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	ref := r.GetImage().GetImage()
	if ref == "" {
		return nil, invalidf("no image given")
	}
	inUse, err := c.rt.ImagesInUse()
	if err != nil {
		return nil, err
	}
	if _, err := c.store.RemoveImage(ref, store.RemoveOptions{InUse: inUse}); err != nil {
		if errors.Is(err, store.ErrImageNotFound) {
			return &runtimeapi.RemoveImageResponse{}, nil
		}
		return nil, fmt.Errorf("cannot remove image %q: %w", ref, err)
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

// ImageFsInfo reports the space and inodes the image store uses.
func (c *criService) ImageFsInfo(ctx context.Context, r *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	u, err := c.store.Usage()
	if err != nil {
		return nil, err
	}
	fs := &runtimeapi.FilesystemUsage{
		Timestamp:  nowNano(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: u.Mountpoint},
		UsedBytes:  &runtimeapi.UInt64Value{Value: u.Bytes},
		InodesUsed: &runtimeapi.UInt64Value{Value: u.Inodes},
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{fs}}, nil
}
