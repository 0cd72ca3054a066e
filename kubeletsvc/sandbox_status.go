package kubeletsvc

import (
	"context"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodSandboxStatus returns the status of a sandbox, with its containers'
// statuses; verbose adds the pod's stage0 view as JSON under "info".
func (c *criService) PodSandboxStatus(ctx context.Context, r *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	s, err := c.getSandbox(ctx, r.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.PodSandboxStatusResponse{Status: sandboxStatus(s), Timestamp: time.Now().UnixNano()}
	for _, ct := range s.containers() {
		resp.ContainersStatuses = append(resp.ContainersStatuses, c.containerStatus(ct))
	}
	if r.GetVerbose() {
		resp.Info = map[string]string{"info": toJSON(map[string]any{
			"pid":          s.pod.Stage1PID,
			"state":        s.pod.State,
			"podDir":       s.pod.Dir,
			"networks":     s.pod.Networks,
			"net":          s.pod.Manifest.Net,
			"cgroupParent": s.pod.Manifest.CgroupParent,
			"config":       s.cfg,
		})}
	}
	return resp, nil
}

// sandboxState maps the pod state to the CRI's.
func sandboxState(s *sandbox) runtimeapi.PodSandboxState {
	if s.ready() {
		return runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return runtimeapi.PodSandboxState_SANDBOX_NOTREADY
}

// sandboxStatus builds the CRI status of a sandbox from its pod.
func sandboxStatus(s *sandbox) *runtimeapi.PodSandboxStatus {
	nsOpts := s.cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	st := &runtimeapi.PodSandboxStatus{
		Id:             s.ID(),
		Metadata:       s.cfg.GetMetadata(),
		State:          sandboxState(s),
		CreatedAt:      s.pod.CreatedAt.UnixNano(),
		Labels:         s.cfg.GetLabels(),
		Annotations:    s.cfg.GetAnnotations(),
		RuntimeHandler: s.pod.Manifest.Annotations[annoHandler],
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{
			Network:  nsOpts.GetNetwork(),
			Pid:      nsOpts.GetPid(),
			Ipc:      nsOpts.GetIpc(),
			TargetId: nsOpts.GetTargetId(),
		}}},
	}
	if nsOpts.GetNetwork() != runtimeapi.NamespaceMode_NODE {
		var ips []string
		for _, n := range s.pod.Networks {
			for _, ip := range n.IPs {
				ips = append(ips, strings.SplitN(ip, "/", 2)[0])
			}
		}
		if len(ips) > 0 {
			st.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: ips[0]}
			for _, ip := range ips[1:] {
				st.Network.AdditionalIps = append(st.Network.AdditionalIps, &runtimeapi.PodIP{Ip: ip})
			}
		}
	}
	if st.Network == nil {
		st.Network = &runtimeapi.PodSandboxNetworkStatus{}
	}
	return st
}
