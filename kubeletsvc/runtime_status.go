package kubeletsvc

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage0"
)

// Status reports the runtime's conditions (RuntimeReady; NetworkReady
// false, with the reason, while no usable CNI network is configured), its
// runtime handlers and features.
func (c *criService) Status(ctx context.Context, r *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	runtimeCond := &runtimeapi.RuntimeCondition{Type: runtimeapi.RuntimeReady, Status: true}
	netCond := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true}
	if ok, why := c.rt.NetworkReady(); !ok {
		netCond.Status = false
		netCond.Reason = "NetworkPluginNotReady"
		netCond.Message = "no usable CNI network for pods: " + why
	}
	resp := &runtimeapi.StatusResponse{
		Status:   &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{runtimeCond, netCond}},
		Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true},
	}
	for _, name := range append([]string{""}, c.cfg.RuntimeHandlers...) {
		resp.RuntimeHandlers = append(resp.RuntimeHandlers, &runtimeapi.RuntimeHandler{
			Name: name,
			Features: &runtimeapi.RuntimeHandlerFeatures{
				RecursiveReadOnlyMounts: true,
				UserNamespaces:          c.usernsErr == nil,
			},
		})
	}
	if r.GetVerbose() {
		cfg := c.rt.Config()
		resp.Info = map[string]string{"config": toJSON(map[string]any{
			"dataDir":       cfg.DataDir,
			"stateDir":      schema.PodsDir(cfg.DataDir), // where app rootfs live (critest checks idmap support on its parent)
			"stage1Path":    cfg.Stage1Path,
			"cgroupParent":  cfg.CgroupParent,
			"cniConfDir":    c.rt.Config().Net.ConfDir,
			"cniPluginDirs": c.rt.Config().Net.PluginDirs,
			"configDirs":    c.cfg.ConfigDirs,
		})}
	}
	return resp, nil
}

// RuntimeConfig reports the cgroup driver the pods use, so that the
// kubelet picks the same: stage1 places apps with systemd when systemd is
// the init system (/run/systemd/system exists), with cgroupfs otherwise.
func (c *criService) RuntimeConfig(ctx context.Context, r *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	driver := runtimeapi.CgroupDriver_CGROUPFS
	if stage0.SystemdRunning() {
		driver = runtimeapi.CgroupDriver_SYSTEMD
	}
	return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: driver}}, nil
}

// UpdateRuntimeConfig takes the node's pod CIDR for the built-in default
// network.
func (c *criService) UpdateRuntimeConfig(ctx context.Context, r *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	cidr := r.GetRuntimeConfig().GetNetworkConfig().GetPodCidr()
	if cidr == "" {
		return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
	}
	if err := c.rt.SetPodCIDR(cidr); err != nil {
		return nil, invalidf("pod CIDR %q: %v", cidr, err)
	}
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}
