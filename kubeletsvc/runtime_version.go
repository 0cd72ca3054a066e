package kubeletsvc

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/buildinfo"
)

const (
	runtimeName = "rkt"
	// kubeAPIVersion is the version of the kubelet runtime API (not of CRI).
	kubeAPIVersion = "0.1.0"
	criAPIVersion  = "v1"
)

// Version returns the runtime name and versions.
func (c *criService) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           kubeAPIVersion,
		RuntimeName:       runtimeName,
		RuntimeVersion:    buildinfo.Version,
		RuntimeApiVersion: criAPIVersion,
	}, nil
}
