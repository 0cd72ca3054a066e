package networking

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"

	"github.com/rkt/rkt/pkg/fileperm"
)

// GC releases what pods that no longer exist still hold, for pods whose
// directory went away without a Teardown (removed by hand, or lost): it runs
// CNI DEL for their attachments in libcni's cache under the data dir,
// removes the iptables rules tagged with them, their host-local reservations
// (also those without a cache entry) and their use of the default network's
// outbound NAT rule; a cache entry cut short (brokenCacheEntries) gets its
// DEL with its network's config of now and is removed once its pod's rules
// on its network are swept and the reservations released. It also removes the
// stale temporary files of atomic writes of the network state
// (fileperm.RemoveStaleTemp). exists reports whether a pod UUID still
// exists in any state (prepare, prepared, run, exited-garbage, garbage); it
// is asked after the resource was found, so a pod being set up right now
// is safe as long as its directory exists before its Setup starts.
func GC(ctx context.Context, cfg Config, exists func(uuid string) bool) error {
	var errs []error
	cni, _ := newDelCNI(cfg) // gcReservations below releases what a DEL left
	atts, err := cni.GetCachedAttachments("")
	if err != nil {
		return fmt.Errorf("cannot list cached network attachments: %w", err)
	}
	nets := map[string][]string{} // of each vanished pod, the networks left
	for _, a := range atts {
		if exists(a.ContainerID) {
			continue
		}
		if err := delAttachment(ctx, cfg, cni, a); err != nil {
			errs = append(errs, err)
			continue
		}
		if isNetNS(a.NetNS) {
			if err := removeNetNS(a.NetNS); err != nil {
				errs = append(errs, err)
			}
		}
		nets[a.ContainerID] = append(nets[a.ContainerID], a.Network)
	}
	// entries cut short lost their config: a DEL with the network's
	// config of now, then sweep and release as for the others
	broken, err := brokenCacheEntries(cfg, "")
	if err != nil {
		errs = append(errs, err)
	}
	var gone []brokenEntry
	for _, b := range broken {
		if exists(b.containerID) {
			continue
		}
		if err := b.del(ctx, cfg, ""); err != nil {
			errs = append(errs, err)
			continue
		}
		gone = append(gone, b)
		nets[b.containerID] = append(nets[b.containerID], b.network)
	}
	swept := map[string]bool{}
	for id, n := range nets {
		if err := sweepIPTables(ctx, id, n); err != nil {
			errs = append(errs, err)
			continue
		}
		swept[id] = true
	}
	if err := gcReservations(ctx, cfg, exists); err != nil {
		errs = append(errs, err)
	} else {
		for _, b := range gone {
			if !swept[b.containerID] {
				continue // kept for the next GC
			}
			if err := b.remove(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := gcMasquerade(ctx, cfg, exists); err != nil {
		errs = append(errs, err)
	}
	if err := fileperm.RemoveStaleTemp(cfg.stateDir()); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// delAttachment runs CNI DEL for a cached attachment of a vanished pod.
// Plugins no longer installed are skipped (installedPlugins); the callers
// sweep the pod's iptables rules and release its reservations after.
func delAttachment(ctx context.Context, cfg Config, cni *libcni.CNIConfig, a *libcni.NetworkAttachment) error {
	list, err := libcni.ConfListFromBytes(a.Config)
	if err != nil {
		return fmt.Errorf("invalid cached config of network %q of pod %q: %w", a.Network, a.ContainerID, err)
	}
	list, _ = installedPlugins(cfg, list)
	netns := a.NetNS
	if !isNetNS(netns) {
		netns = ""
	}
	rt := &libcni.RuntimeConf{
		ContainerID:    a.ContainerID,
		NetNS:          netns,
		IfName:         a.IfName,
		Args:           a.CniArgs,
		CapabilityArgs: a.CapabilityArgs,
	}
	if err := cni.DelNetworkList(ctx, list, rt); err != nil {
		return fmt.Errorf("cannot remove vanished pod %q from network %q: %w", a.ContainerID, a.Network, err)
	}
	return nil
}

// releaseReservations removes the host-local reservations of pod uuid.
func releaseReservations(ctx context.Context, cfg Config, uuid string) error {
	return gcReservations(ctx, cfg, func(id string) bool { return id != uuid })
}

// gcReservations removes host-local reservations (files named after an IP,
// holding "<container id>\r\n<ifname>") of pods that no longer exist,
// under each network's lock (host-local's), waited for until ctx ends.
func gcReservations(ctx context.Context, cfg Config, exists func(uuid string) bool) error {
	nets, err := os.ReadDir(cfg.ipamDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot list IPAM state: %w", err)
	}
	var errs []error
	for _, n := range nets {
		if n.IsDir() {
			if err := gcNetworkReservations(ctx, filepath.Join(cfg.ipamDir(), n.Name()), exists); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func gcNetworkReservations(ctx context.Context, dir string, exists func(uuid string) bool) error {
	l, err := lockFile(ctx, filepath.Join(dir, "lock"))
	if err != nil {
		return fmt.Errorf("cannot release addresses of vanished pods in network %q: %w", filepath.Base(dir), err)
	}
	defer l.Close()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("cannot list IPAM state %q: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "lock" || strings.HasPrefix(e.Name(), "last_reserved_ip") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		id, _, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
		id = strings.TrimSpace(id)
		if id == "" || exists(id) {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("cannot release address %s of vanished pod %q: %w", e.Name(), id, err)
		}
	}
	return nil
}
