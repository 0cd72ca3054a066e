package kubeletsvc

import (
	"fmt"
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

// translateLinux translates the Linux part of a container config:
// resources and the security context. It returns the container ID whose
// PID namespace to join (NamespaceMode_TARGET), for the caller to resolve.
func translateLinux(sb *runtimeapi.PodSandboxConfig, l *runtimeapi.LinuxContainerConfig, opts *stage0.AppOptions) (string, error) {
	if res := l.GetResources(); res != nil {
		if err := checkResources("linux.resources", res); err != nil {
			return "", err
		}
		opts.Resources = linuxResources(res)
		oom := int(res.GetOomScoreAdj())
		opts.OOMScoreAdj = &oom
	}
	sc := l.GetSecurityContext()
	if sc == nil {
		opts.Seccomp = stage0.SeccompUnconfined
		return "", nil
	}
	if u := sc.GetRunAsUser(); u != nil {
		if u.GetValue() < 0 || u.GetValue() > maxID {
			return "", invalidf("linux.security_context.run_as_user %d is out of range", u.GetValue())
		}
		opts.User = strconv.FormatInt(u.GetValue(), 10)
	} else if sc.GetRunAsUsername() != "" {
		if strings.ContainsAny(sc.GetRunAsUsername(), ":\x00") {
			return "", invalidf("linux.security_context.run_as_username %q is not a user name", sc.GetRunAsUsername())
		}
		opts.User = sc.GetRunAsUsername()
	}
	if g := sc.GetRunAsGroup(); g != nil {
		if opts.User == "" {
			return "", invalidf("linux.security_context.run_as_group needs run_as_user or run_as_username")
		}
		if g.GetValue() < 0 || g.GetValue() > maxID {
			return "", invalidf("linux.security_context.run_as_group %d is out of range", g.GetValue())
		}
		opts.Group = strconv.FormatInt(g.GetValue(), 10)
	}
	for _, g := range sc.GetSupplementalGroups() {
		if g < 0 || g > maxID {
			return "", invalidf("linux.security_context.supplemental_groups: %d is out of range", g)
		}
		opts.SupplementaryGroups = append(opts.SupplementaryGroups, uint32(g))
	}
	opts.StrictGroups = sc.GetSupplementalGroupsPolicy() == runtimeapi.SupplementalGroupsPolicy_Strict
	opts.Privileged = sc.GetPrivileged()
	if opts.Privileged && !sb.GetLinux().GetSecurityContext().GetPrivileged() {
		// as containerd and CRI-O refuse it
		return "", invalidf("linux.security_context.privileged: no privileged container allowed in a sandbox that is not privileged")
	}
	opts.ReadonlyRootfs = sc.GetReadonlyRootfs()
	opts.NoNewPrivileges = sc.GetNoNewPrivs()
	for i, p := range sc.GetMaskedPaths() {
		if err := checkPath(fmt.Sprintf("linux.security_context.masked_paths[%d]", i), p); err != nil {
			return "", err
		}
	}
	for i, p := range sc.GetReadonlyPaths() {
		if err := checkPath(fmt.Sprintf("linux.security_context.readonly_paths[%d]", i), p); err != nil {
			return "", err
		}
	}
	// None at all is what the kubelet sends for procMount Unmasked, which
	// Kubernetes allows in a user namespace only; elsewhere (crictl's
	// JSON, any other client) the defaults stay: /proc/sys writable by a
	// container's root is the host's.
	u := sb.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
	inUserNS := u != nil && u.GetMode() == runtimeapi.NamespaceMode_POD // none given: the host's
	if inUserNS || len(sc.GetMaskedPaths()) > 0 || len(sc.GetReadonlyPaths()) > 0 {
		opts.MaskedPaths = append([]string{}, sc.GetMaskedPaths()...)
		opts.ReadonlyPaths = append([]string{}, sc.GetReadonlyPaths()...)
	}
	if caps := sc.GetCapabilities(); caps != nil {
		opts.CapsAdd = capNames(caps.GetAddCapabilities())
		opts.CapsDrop = capNames(caps.GetDropCapabilities())
	}
	seccomp, err := seccompProfile(sc)
	if err != nil {
		return "", err
	}
	opts.Seccomp = seccomp
	if err := applyLSM(sc, opts); err != nil {
		return "", err
	}
	ns := sc.GetNamespaceOptions()
	target := ""
	switch ns.GetPid() {
	case runtimeapi.NamespaceMode_POD:
		opts.PIDMode = stage0.NamespacePod
	case runtimeapi.NamespaceMode_CONTAINER:
		opts.PIDMode = stage0.NamespaceContainer
	case runtimeapi.NamespaceMode_NODE:
		opts.PIDMode = stage0.NamespaceNode
	case runtimeapi.NamespaceMode_TARGET:
		if ns.GetTargetId() == "" {
			return "", invalidf("linux.security_context.namespace_options.target_id is empty for PID mode TARGET")
		}
		opts.PIDMode = stage0.NamespaceTarget
		target = ns.GetTargetId()
	default:
		return "", invalidf("linux.security_context.namespace_options.pid: unknown mode %d", ns.GetPid())
	}
	if err := checkUserns(ns.GetUsernsOptions()); err != nil {
		return "", err
	}
	return target, nil
}

// maxID is the largest valid uid or gid (2^32-2; -1 means "none").
const maxID = 1<<32 - 2

// capNames normalizes capability names to CAP_X ("ALL" stays).
func capNames(in []string) []string {
	var out []string
	for _, c := range in {
		c = strings.ToUpper(strings.TrimSpace(c))
		if c != "ALL" && !strings.HasPrefix(c, "CAP_") {
			c = "CAP_" + c
		}
		out = append(out, c)
	}
	return out
}

// seccompProfile picks the seccomp profile name for stage0. As in every
// CRI runtime, no profile means unconfined.
func seccompProfile(sc *runtimeapi.LinuxContainerSecurityContext) (string, error) {
	if p := sc.GetSeccomp(); p != nil {
		switch p.GetProfileType() {
		case runtimeapi.SecurityProfile_RuntimeDefault:
			return stage0.SeccompDefault, nil
		case runtimeapi.SecurityProfile_Unconfined:
			return stage0.SeccompUnconfined, nil
		case runtimeapi.SecurityProfile_Localhost:
			if p.GetLocalhostRef() == "" {
				return "", invalidf("localhost seccomp profile without a path")
			}
			return "localhost/" + p.GetLocalhostRef(), nil
		}
	}
	//lint:ignore SA1019 older kubelets send only the path
	switch p := sc.GetSeccompProfilePath(); {
	case p == "" || p == "unconfined":
		return stage0.SeccompUnconfined, nil
	case p == "runtime/default" || p == "docker/default":
		return stage0.SeccompDefault, nil
	case strings.HasPrefix(p, "localhost/"):
		return p, nil
	default:
		return "", invalidf("unknown seccomp profile %q", p)
	}
}

// applyLSM passes AppArmor and SELinux settings to stage0, which refuses
// them when the host has no such LSM; the runtime default and unconfined
// need nothing.
func applyLSM(sc *runtimeapi.LinuxContainerSecurityContext, opts *stage0.AppOptions) error {
	//lint:ignore SA1019 older kubelets send only the name
	legacy := sc.GetApparmorProfile()
	if a := sc.GetApparmor(); a != nil {
		if a.GetProfileType() == runtimeapi.SecurityProfile_Localhost {
			opts.ApparmorProfile = a.GetLocalhostRef()
		}
	} else if p := legacy; p != "" && p != "runtime/default" && p != "unconfined" {
		opts.ApparmorProfile = strings.TrimPrefix(p, "localhost/")
	}
	if se := sc.GetSelinuxOptions(); se != nil && (se.GetUser() != "" || se.GetRole() != "" || se.GetType() != "" || se.GetLevel() != "") {
		opts.SelinuxLabel = strings.Join([]string{se.GetUser(), se.GetRole(), se.GetType(), se.GetLevel()}, ":")
	}
	return nil
}
