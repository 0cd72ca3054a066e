package kubeletsvc

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListPodSandbox lists the sandboxes matching the filter.
func (c *criService) ListPodSandbox(ctx context.Context, r *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	if unfilteredSandboxes(r.GetFilter()) {
		snap, err := c.snapshot(ctx)
		if err != nil {
			return nil, err
		}
		return snap.podSandboxResponse(), nil
	}
	items, err := c.podSandboxes(ctx, r.GetFilter())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListPodSandboxResponse{Items: items}, nil
}

// StreamPodSandboxes is ListPodSandbox in batches (sendBatches).
func (c *criService) StreamPodSandboxes(r *runtimeapi.StreamPodSandboxesRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxesResponse]) error {
	items, err := c.podSandboxes(stream.Context(), r.GetFilter())
	if err != nil {
		return err
	}
	return sendBatches(stream, items, func(b []*runtimeapi.PodSandbox) *runtimeapi.StreamPodSandboxesResponse {
		return &runtimeapi.StreamPodSandboxesResponse{PodSandboxes: b}
	})
}

func (c *criService) podSandboxes(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	snap, err := c.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if unfilteredSandboxes(f) {
		return snap.podSandboxItems(), nil
	}
	sbs := snap.sbs
	items := []*runtimeapi.PodSandbox{}
	for _, s := range sbs {
		if f != nil {
			if f.GetId() != "" && !strings.HasPrefix(s.ID(), f.GetId()) {
				continue
			}
			if f.GetState() != nil && f.GetState().GetState() != sandboxState(s) {
				continue
			}
			if !matchLabels(s.cfg.GetLabels(), f.GetLabelSelector()) {
				continue
			}
		}
		items = append(items, podSandboxItem(s))
	}
	return items, nil
}

// podSandboxItem is a sandbox as ListPodSandbox shows it.
func podSandboxItem(s *sandbox) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{
		Id:             s.ID(),
		Metadata:       s.cfg.GetMetadata(),
		State:          sandboxState(s),
		CreatedAt:      s.pod.CreatedAt.UnixNano(),
		Labels:         s.cfg.GetLabels(),
		Annotations:    s.cfg.GetAnnotations(),
		RuntimeHandler: s.pod.Manifest.Annotations[annoHandler],
	}
}

func unfilteredSandboxes(f *runtimeapi.PodSandboxFilter) bool {
	return f.GetId() == "" && f.GetState() == nil && len(f.GetLabelSelector()) == 0
}

// matchLabels reports whether labels hold every key=value of selector.
func matchLabels(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
