package kubeletsvc

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ListContainers lists the containers matching the filter.
func (c *criService) ListContainers(ctx context.Context, r *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	if unfilteredContainers(r.GetFilter()) {
		snap, err := c.snapshot(ctx)
		if err != nil {
			return nil, err
		}
		return snap.containersResponse(c), nil
	}
	items, err := c.containersMatching(ctx, r.GetFilter())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListContainersResponse{Containers: items}, nil
}

// StreamContainers is ListContainers in batches (sendBatches).
func (c *criService) StreamContainers(r *runtimeapi.StreamContainersRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamContainersResponse]) error {
	items, err := c.containersMatching(stream.Context(), r.GetFilter())
	if err != nil {
		return err
	}
	return sendBatches(stream, items, func(b []*runtimeapi.Container) *runtimeapi.StreamContainersResponse {
		return &runtimeapi.StreamContainersResponse{Containers: b}
	})
}

// filteredContainers returns the containers a filter selects.
func (c *criService) filteredContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*container, error) {
	var ctrs []*container
	if f.GetPodSandboxId() != "" {
		s, err := c.getSandbox(ctx, f.GetPodSandboxId())
		if err != nil {
			if isNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		ctrs = s.containers()
	} else {
		snap, err := c.snapshot(ctx)
		if err != nil {
			return nil, err
		}
		ctrs = snap.allContainers()
	}
	var out []*container
	for _, ct := range ctrs {
		if f.GetId() != "" && !strings.HasPrefix(ct.id, f.GetId()) {
			continue
		}
		if f.GetState() != nil && f.GetState().GetState() != containerState(ct.app.State) {
			continue
		}
		if !matchLabels(ct.cfg.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		out = append(out, ct)
	}
	return out, nil
}

func (c *criService) containersMatching(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	if unfilteredContainers(f) {
		snap, err := c.snapshot(ctx)
		if err != nil {
			return nil, err
		}
		return snap.containerItems(c), nil
	}
	ctrs, err := c.filteredContainers(ctx, f)
	if err != nil {
		return nil, err
	}
	items := []*runtimeapi.Container{}
	for _, ct := range ctrs {
		items = append(items, c.containerItem(ct))
	}
	return items, nil
}

func unfilteredContainers(f *runtimeapi.ContainerFilter) bool {
	return f.GetId() == "" && f.GetPodSandboxId() == "" && f.GetState() == nil && len(f.GetLabelSelector()) == 0
}

// containerItem is a container as ListContainers shows it.
func (c *criService) containerItem(ct *container) *runtimeapi.Container {
	st := c.containerStatus(ct)
	return &runtimeapi.Container{
		Id:           ct.id,
		PodSandboxId: ct.sb.ID(),
		Metadata:     st.Metadata,
		Image:        st.Image,
		ImageRef:     st.ImageRef,
		ImageId:      st.ImageId,
		State:        st.State,
		CreatedAt:    st.CreatedAt,
		Labels:       st.Labels,
		Annotations:  st.Annotations,
	}
}
